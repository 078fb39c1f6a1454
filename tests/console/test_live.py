"""A live round in the console: `/live 2 10`, players join with `/press live-join` and
answer with a number as themselves (`/as NAME`), the console prints each deadline, and the
fake clock drives the scheduler's pass to the podium."""

from __future__ import annotations

import io
from datetime import UTC, timedelta
from typing import Any

from adapters.console.chat import ConsoleChat
from adapters.console.clock import clock_command
from adapters.console.play import ConsoleSession
from bot.app import FEATURES
from bot.bank import QuestionBank
from bot.clock import FakeClock, OffsetClock
from bot.domain import Platform
from bot.scheduling import Scheduler
from tests.quiz import quiz_of, service_of

PLAYERS = ("ann", "bob", "cy")


async def test_a_live_round_is_played_in_the_console(
    store: Any, bank: QuestionBank, clock: FakeClock
) -> None:
    out = io.StringIO()
    chat = ConsoleChat(out)
    async with quiz_of(store, {Platform.CONSOLE: chat}, bank, clock, features=FEATURES) as quiz:
        scheduler = service_of(quiz, Scheduler)
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


async def test_the_console_clock_walks_a_round_to_its_podium(
    store: Any, bank: QuestionBank
) -> None:
    """`/clock +2m` after `/live 2 10`: every step on the way, in order, as if the time had
    passed (the scheduler's pass runs the round's steps)."""
    out = io.StringIO()
    chat = ConsoleChat(out)
    clock = OffsetClock(FakeClock())
    async with quiz_of(store, {Platform.CONSOLE: chat}, bank, clock, features=FEATURES) as quiz:
        scheduler = service_of(quiz, Scheduler)
        session = ConsoleSession(quiz, chat, out)
        session.extra["clock"] = clock_command(clock, scheduler)
        await session.handle("/live 2 10")
        await session.handle("/clock +31s")
        await session.handle("2")
        await session.handle("/clock +2m")
        text = out.getvalue()
        order = [
            text.index(s)
            for s in (
                "Live · question 1 of 2",
                "Locked in",
                "Results · question 1",
                "Live · question 2 of 2",
                "Results · question 2",
                "Live round: the podium",
            )
        ]
        assert order == sorted(order)
