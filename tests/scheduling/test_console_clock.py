"""The console's `/schedule` and `/clock` time travel: try a schedule without waiting."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from adapters.console.chat import ConsoleChat
from adapters.console.clock import clock_command
from adapters.console.play import ConsoleSession
from bot.bank import QuestionBank
from bot.clock import FakeClock, OffsetClock
from bot.domain import Platform
from bot.scheduling import Scheduler
from storage.store import SqlStore
from tests.quiz import quiz_of, service_of


@pytest.fixture
async def console(
    store: SqlStore, bank: QuestionBank
) -> AsyncIterator[tuple[ConsoleSession, io.StringIO, OffsetClock]]:
    out = io.StringIO()
    chat = ConsoleChat(out)
    # Monday 4 January 2027, 09:00 UTC on the real-time side of the offset.
    clock = OffsetClock(FakeClock(datetime(2027, 1, 4, 9, tzinfo=UTC)))
    async with quiz_of(store, {Platform.CONSOLE: chat}, bank, clock, seed=3) as quiz:
        scheduler = service_of(quiz, Scheduler)
        session = ConsoleSession(quiz, chat, out)
        session.extra["clock"] = clock_command(clock, scheduler)
        yield session, out, clock


async def test_clock_jumps_walk_through_every_slot_and_reveal_on_the_way(
    console: tuple[ConsoleSession, io.StringIO, OffsetClock],
) -> None:
    session, out, clock = console
    await session.handle("/schedule set 09:30 UTC mon-fri")
    assert "Mon 2027-01-04 09:30 (UTC)" in out.getvalue()
    await session.handle("/clock")
    assert "(clock: Mon 2027-01-04 09:00 UTC)" in out.getvalue()

    start = out.tell()
    await session.handle("/clock +1d")  # passes Monday 09:30, stops Tuesday 09:00
    jumped = out.getvalue()[start:]
    assert jumped.count("== Question ·") == 1 and "== Answer:" not in jumped
    assert "(clock: Tue 2027-01-05 09:00 UTC, 1d ahead of real time)" in jumped

    start = out.tell()
    await session.handle("/clock +4d1h")  # Tue..Fri slots; Mon..Fri revealed (Fri at 24 h)
    jumped = out.getvalue()[start:]
    assert jumped.count("== Question ·") == 4
    assert jumped.count("== Answer:") == 5
    assert jumped.index("== Answer:") < jumped.index("== Question ·")  # reveal, then new
    assert "(clock: Sat 2027-01-09 10:00 UTC, 5d1h ahead of real time)" in jumped
    assert clock.now() == datetime(2027, 1, 9, 10, tzinfo=UTC)


@pytest.mark.parametrize("arg", ["1d", "+soon", "+0m", "+400d", "-1h"])
async def test_clock_refuses_anything_but_a_forward_jump(
    console: tuple[ConsoleSession, io.StringIO, OffsetClock], arg: str
) -> None:
    session, out, clock = console
    await session.handle(f"/clock {arg}")
    assert "usage: /clock" in out.getvalue()
    assert clock.offset.total_seconds() == 0
