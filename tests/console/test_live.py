"""A live round in the console: `/live 2 10`, players join with `/press live-join` and
answer with a number as themselves (`/as NAME`), the console prints each deadline, and the
fake clock drives the scheduler's pass to the podium."""

from __future__ import annotations

import io
from datetime import UTC, timedelta
from typing import Any

from adapters.console.chat import ConsoleChat
from adapters.console.play import ConsoleSession
from bot.app import FEATURES
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import Platform
from bot.scheduling import Scheduler
from tests.quiz import quiz_of

PLAYERS = ("ann", "bob", "cy")


async def test_a_live_round_is_played_in_the_console(
    store: Any, bank: QuestionBank, clock: FakeClock
) -> None:
    out = io.StringIO()
    chat = ConsoleChat(out)
    async with quiz_of(store, {Platform.CONSOLE: chat}, bank, clock, features=FEATURES) as quiz:
        scheduler = quiz.registry.service(Scheduler)
        assert scheduler is not None
        session = ConsoleSession(quiz, chat, out)
        await session.handle("/live 2 10")
        start = clock.now() + timedelta(seconds=30)
        assert f"(deadline {start.astimezone(UTC):%H:%M:%S} UTC)" in out.getvalue()
        for name in PLAYERS:
            await session.handle(f"/as {name}")
            await session.handle("/press live-join")
        clock.advance(timedelta(seconds=30))
        for k in (1, 2):
            await scheduler.tick()
            assert f"Live · question {k} of 2" in out.getvalue()
            for i, name in enumerate(PLAYERS):
                await session.handle(f"/as {name}")
                await session.handle(str(i + 1))
                clock.advance(timedelta(seconds=3))
            clock.advance(timedelta(seconds=1))
            await scheduler.tick()
            assert f"Results · question {k}" in out.getvalue()
        text = out.getvalue()
        assert text.count("You're in") == 3 and text.count("Locked in") == 6
        assert "Live round: the podium" in text and "== Standings ==" in text
        await session.handle("/live")
        assert "No live round is running" in out.getvalue()
        await session.handle("1")  # after the round: nothing is open any more
        assert "No open question" in out.getvalue().splitlines()[-1]
