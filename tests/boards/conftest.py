"""Helpers for the boards tests: play a question with chosen outcomes, a full command set."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from bot import basics, practice, report
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.commands import CommandSet
from bot.domain import ChannelRef, ChannelSettings, Platform, Post, PostKind, UserRef
from bot.features import FeatureFactory, Quiz
from bot.quiz import QuizService
from tests.fakes import RecordingChat
from tests.quiz import asked, quiz_of

BOARDS = [basics.feature, practice.feature, report.feature]


@pytest.fixture
def features() -> list[FeatureFactory]:
    """What `basic` runs: the basic commands, practice and the admin report (a test module
    overrides it with its own)."""
    return BOARDS


@pytest.fixture
async def basic(
    store: Any,
    chat: RecordingChat,
    bank: QuestionBank,
    clock: FakeClock,
    features: list[FeatureFactory],
) -> AsyncIterator[Quiz]:
    """The quiz of `features` on one recording chat for every platform."""
    chats = {Platform.CONSOLE: chat, Platform.SLACK: chat, Platform.DISCORD: chat}
    async with quiz_of(store, chats, bank, clock, features=features) as q:
        yield q


@pytest.fixture
def commands(basic: Quiz) -> CommandSet:
    return basic.commands


async def set_timezone(service: QuizService, channel: ChannelRef, timezone: str) -> None:
    await service.store.settings.save(ChannelSettings(channel, timezone=timezone))


async def play(
    service: QuizService,
    channel: ChannelRef,
    results: dict[UserRef, bool],
    *,
    kind: PostKind = PostKind.SCHEDULED,
    at: datetime | None = None,
    close: bool = True,
    topic: str | None = None,
) -> Post:
    """Ask a question, answer it right (True) or wrong (False) per user, in order, one
    second apart from `at` (or now), then close it."""
    clock = service.clock
    assert isinstance(clock, FakeClock)
    if at is not None:
        clock.set(at)
    post = await asked(service, channel, kind=kind, topic=topic)
    q = service.bank.get(post.question_id)
    assert q is not None
    for who, right in results.items():
        choice = q.answer if right else (q.answer + 1) % q.choice_count
        await service.record_answer(post.id, who, choice)
        clock.advance(timedelta(seconds=1))
    if close:
        assert await service.close(post.id) is not None
    return post
