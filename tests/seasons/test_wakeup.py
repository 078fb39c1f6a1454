"""A season's end is a wake-up of its own: APScheduler (real, in this process) holds one
job at the nearest end, re-planned when seasons change, and that job's pass ends the
season and posts its podium at the end instant itself, not at the next 30 s pass.

The bot's clock is a `FakeClock` set near the real time (APScheduler's jobs are on the
system clock, so the planned end is always ahead of it); the test runs the planned job
itself at the end instant rather than waiting for it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import pytest

from bot.bank import QuestionBank
from bot.clock import FakeClock, SystemClock
from bot.domain import ChannelRef, Platform
from bot.features import Quiz
from bot.scheduling import Scheduler
from bot.scheduling.trigger import RECONCILE_JOB, TICKERS_JOB
from bot.seasons import SeasonScope
from storage.store import SqlStore
from tests.conftest import user
from tests.fakes import RecordingChat
from tests.polling import eventually
from tests.quiz import quiz_of
from tests.seasons.conftest import LEAGUE, say
from tests.seasons.test_seasons import podiums

C1 = ChannelRef(Platform.SLACK, "T1", "C1")
C2 = ChannelRef(Platform.SLACK, "T1", "C2")
ANN = user("ann")


@pytest.fixture
async def woken(
    store: SqlStore, chat: RecordingChat, bank: QuestionBank, clock: FakeClock
) -> AsyncIterator[Quiz]:
    """The league with APScheduler's wake-ups on, as `quizbot serve` runs it."""
    clock.set(SystemClock().now().replace(microsecond=0))
    async with quiz_of(
        store, {Platform.SLACK: chat}, bank, clock, features=LEAGUE, wakeups=True
    ) as q:
        yield q


def _scheduler(quiz: Quiz) -> Scheduler:
    found = quiz.registry.service(Scheduler)
    assert found is not None and found.apscheduler is not None
    return found


async def _planned(scheduler: Scheduler, at: datetime | None) -> None:
    """The tickers' wake-up becomes `at` (None: none planned); a replan runs a pass in
    the background."""
    await eventually(
        lambda: scheduler.jobs().get(TICKERS_JOB) == at,
        what=f"the tickers' wake-up at {at}",
        detail=lambda: scheduler.jobs(),
    )


async def test_the_end_is_handled_at_its_instant_not_at_the_next_pass(
    woken: Quiz, store: SqlStore, chat: RecordingChat, clock: FakeClock
) -> None:
    scheduler = _scheduler(woken)
    assert TICKERS_JOB not in scheduler.jobs()  # no season: nothing to wake for
    await say(woken, C1, ANN, "season start Spring 1", admin=True)
    season = await store.seasons.current(C1, clock.now())
    assert season is not None
    await _planned(scheduler, season.ends_at)
    assert RECONCILE_JOB in scheduler.jobs()  # the 30 s pass stays, as a backstop
    clock.set(season.ends_at)
    job = scheduler.apscheduler.get_job(TICKERS_JOB) if scheduler.apscheduler else None
    assert job is not None
    await job.func()  # what APScheduler runs at that instant

    async def posted_at() -> datetime | None:
        ended = await store.seasons.get(season.id)
        return ended.podium_posted_at if ended is not None else None

    # Marked after the post returned: wait for the mark, not the message.
    assert await eventually(posted_at, what="the podium marked posted") == season.ends_at
    assert clock.now() == season.ends_at and len(podiums(chat)) == 1
    await _planned(scheduler, None)  # nothing is due any more


async def test_the_wake_up_follows_the_nearest_end_as_seasons_change(
    woken: Quiz, store: SqlStore, clock: FakeClock
) -> None:
    scheduler = _scheduler(woken)
    await say(woken, C1, ANN, "season start Long 3", admin=True)
    long = await store.seasons.current(C1, clock.now())
    assert long is not None
    await _planned(scheduler, long.ends_at)
    await say(woken, C2, ANN, "season start Short 1", admin=True)
    short = await store.seasons.current(C2, clock.now())
    assert short is not None and short.ends_at < long.ends_at
    await _planned(scheduler, short.ends_at)
    clock.advance(timedelta(hours=1))
    await say(woken, C2, ANN, "season end", admin=True)  # ended early: back to the other
    await _planned(scheduler, long.ends_at)
    # Started elsewhere (another replica: no replan here): this pass plans it.
    other = ChannelRef(Platform.SLACK, "T1", "C3")
    now = clock.now()
    sooner = await store.seasons.start(
        other, SeasonScope.CHANNEL, "Elsewhere", now, now + timedelta(days=2), "U", now
    )
    await scheduler.tick()
    assert scheduler.jobs().get(TICKERS_JOB) == sooner.ends_at
