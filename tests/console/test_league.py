"""Seasons and teams in the console, through the real registry: a season starts, members
of two teams play, the scheduler's pass ends the season on time and posts its podium
once."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

from adapters.console.chat import ConsoleChat
from adapters.console.play import ConsoleSession
from bot.app import FEATURES
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import Platform
from bot.scheduling import Scheduler
from tests.quiz import quiz_of, service_of
from tests.seasons.conftest import T0


async def test_a_season_of_two_teams_ends_on_time_with_one_podium_in_the_console(
    store: Any, bank: QuestionBank, clock: FakeClock
) -> None:
    clock.set(T0)
    out = io.StringIO()
    chat = ConsoleChat(out)
    async with quiz_of(store, {Platform.CONSOLE: chat}, bank, clock, features=FEATURES) as quiz:
        scheduler = service_of(quiz, Scheduler)
        session = ConsoleSession(quiz, chat, out)
        for line in ("/season start Cup 1", "/team create Owls", "/team create Foxes"):
            await session.handle(line)
        for who, team in (("ann", "Owls"), ("bob", "Foxes")):
            await session.handle(f"/as {who}")
            await session.handle(f"/team join {team}")
        for _ in range(2):
            await session.handle("/ask")
            post = await quiz.service.open_post(session.channel)
            assert post is not None
            question = bank.get(post.question_id)
            assert question is not None
            right, wrong = question.answer + 1, (question.answer + 1) % question.choice_count + 1
            for who, choice in (("ann", right), ("bob", wrong)):
                await session.handle(f"/as {who}")
                await session.handle(str(choice))
            await session.handle("/close")
            clock.advance(timedelta(hours=1))
        await session.handle("/team board season")
        clock.set(T0 + timedelta(days=7))
        await scheduler.tick()
        await scheduler.tick()
        await session.handle("/season list")
    text = out.getvalue()
    assert "Season Cup runs 2027-01-04 – 2027-01-10 over this channel" in text
    assert "ann joined team Owls" in text and "bob joined team Foxes" in text
    assert "Owls — top 3: 20 pts" in text and "Foxes — top 3: 0 pts" in text
    assert text.count("🏆 Season Cup is over") == 1
    assert "🥇 ann — 20 pts (2/2 correct)" in text
    assert "Longest streak" not in text  # asked questions neither make nor break streaks
    assert "Best in kv-cache-serving: ann (1/1 correct)" in text
    assert "Cup · 2027-01-04 – 2027-01-10 · ended" in text
