"""Fixtures for the scheduling tests: a scheduler driven by the fake clock (APScheduler
off: tests call `tick`, the code path APScheduler wakes in production)."""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest

from bot import basics, scheduling
from bot.bank import QuestionBank
from bot.clock import Clock, FakeClock
from bot.domain import ChannelRef, DemoPolicy, Locale, MessageRef, Platform, PostKind, Schedule
from bot.features import Feature, Parts, Quiz, Registry
from bot.i18n import translator
from bot.messages import ANSWER, Button
from bot.ports import Chat
from bot.quiz import QuizService
from bot.scheduling import Scheduler, ScheduleRequest, parse_schedule_request, schedule_feature
from storage.store import SqlStore
from tests.fakes import RecordingChat, Sent
from tests.quiz import quiz_of, service_of


class NamedChat(RecordingChat):
    """A `RecordingChat` whose message ids name the instance (two replicas, one DB)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def _ref(self, channel: ChannelRef) -> MessageRef:
        ref = super()._ref(channel)
        return MessageRef(channel, f"{self.name}-{ref.message}")


def post_id_of(sent: Sent) -> int:
    """The post id carried by a posted question's first button."""
    assert sent.message is not None and sent.message.buttons
    decoded = Button.decode(sent.message.buttons[0].encode())
    assert decoded is not None
    action, post_id, _ = decoded
    assert action == ANSWER
    return post_id


@pytest.fixture
async def basic(
    store: SqlStore, chat: RecordingChat, bank: QuestionBank, clock: FakeClock
) -> AsyncIterator[Quiz]:
    """Here: the basic commands and scheduled questions (APScheduler off: tests tick)."""
    chats: dict[str, Chat] = {Platform.CONSOLE: chat, Platform.SLACK: chat, Platform.DISCORD: chat}
    features = [basics.feature, scheduling.feature]
    async with quiz_of(store, chats, bank, clock, features=features) as q:
        yield q


@pytest.fixture
def scheduler(basic: Quiz) -> Scheduler:
    return service_of(basic, Scheduler)


async def run_until(
    clock: FakeClock, schedulers: Sequence[Scheduler], until: datetime, max_steps: int = 5000
) -> int:
    """Step the fake clock from event to event up to ``until``; at each stop every
    scheduler ticks at once (replicas racing). Returns the number of stops."""
    steps = 0
    while steps < max_steps:
        events = [e for s in schedulers if (e := await s.next_event(clock.now())) is not None]
        nxt = min(events, default=None)
        if nxt is None or nxt > until:
            break
        clock.set(nxt)
        await asyncio.gather(*(s.tick() for s in schedulers))
        steps += 1
    clock.set(max(until, clock.now()))
    await asyncio.gather(*(s.tick() for s in schedulers))
    return steps


SCHEDULED = PostKind.SCHEDULED


@dataclass
class Instance:
    """One bot process: its own engine, service, chat and scheduler."""

    store: SqlStore
    service: QuizService
    scheduler: Scheduler
    chat: RecordingChat
    registry: Registry


@asynccontextmanager
async def instance(
    db_url: str,
    clock: Clock,
    bank: QuestionBank,
    chat: RecordingChat,
    *,
    platforms: Sequence[Platform] = (Platform.SLACK, Platform.DISCORD, Platform.CONSOLE),
    seed: int = 7,
    **scheduler_options: Any,
) -> AsyncIterator[Instance]:
    scheduler_options.setdefault("use_apscheduler", False)

    def scheduled(parts: Parts) -> Feature:
        made = Scheduler(parts.service, parts.store.schedules, **scheduler_options)
        return schedule_feature(made)

    async with SqlStore(db_url, clock=clock) as store:
        chats: dict[str, Chat] = {p: chat for p in platforms}
        async with quiz_of(store, chats, bank, clock, features=[scheduled], seed=seed) as quiz:
            scheduler = service_of(quiz, Scheduler)
            yield Instance(store, quiz.service, scheduler, chat, quiz.registry)


Instances = Callable[..., AbstractAsyncContextManager[Instance]]


@pytest.fixture
def instances(db_url: str, clock: FakeClock, bank: QuestionBank) -> Instances:
    """``async with instances(chat, **options) as one``: a bot process (`instance`) on this
    test's database, clock and bank. Two at once are replicas; a later one is a restart."""

    def start(chat: RecordingChat, **options: Any) -> AbstractAsyncContextManager[Instance]:
        return instance(db_url, clock, bank, chat, **options)

    return start


@pytest.fixture
def bot(basic: Quiz, store: SqlStore, chat: RecordingChat, scheduler: Scheduler) -> Instance:
    """This test's quiz (`basic`) as one process: its store, service, scheduler and chat."""
    return Instance(store, basic.service, scheduler, chat, basic.registry)


def request(text: str, now: datetime, default_zone: str = "UTC") -> ScheduleRequest:
    return parse_schedule_request(shlex.split(text), translator(Locale.EN), default_zone, now)


async def schedule_at(
    store: Any,
    channel: ChannelRef,
    local_time: str,
    policy: DemoPolicy,
    now: datetime,
    *,
    timezone: str = "UTC",
    weekdays: str | None = None,
    by: str = "UROOT",
) -> Schedule:
    """A schedule stored as `quiz schedule set` stores one: at `local_time` in `timezone`,
    every day or on `weekdays` ("mon-fri"), no cron, no window, by `by` at `now`."""
    schedule: Schedule = await store.schedules.add(
        channel,
        timezone=timezone,
        local_time=local_time,
        weekdays=weekdays,
        cron=None,
        window_seconds=None,
        demo_policy=policy,
        created_by=by,
        created_at=now,
    )
    return schedule
