"""Helpers for the boards tests: play a question with chosen outcomes, a full command set."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from bot.clock import FakeClock
from bot.commands import CommandSet, core_commands
from bot.domain import ChannelRef, ChannelSettings, Post, PostKind, UserRef
from bot.practice import install_practice
from bot.quiz import QuizService
from bot.report import add_report_command


@pytest.fixture
def commands(service: QuizService) -> CommandSet:
    cs = core_commands()
    store = service.store
    install_practice(service, cs, store.practice)  # type: ignore[attr-defined]
    add_report_command(cs, store.reports)  # type: ignore[attr-defined]
    return cs


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
    post = await service.ask(channel, kind=kind, topic=topic)
    assert post is not None
    q = service.bank.get(post.question_id)
    assert q is not None
    for who, right in results.items():
        choice = q.answer if right else (q.answer + 1) % q.choice_count
        await service.record_answer(post.id, who, choice)
        clock.advance(timedelta(seconds=1))
    if close:
        assert await service.close(post.id) is not None
    return post
