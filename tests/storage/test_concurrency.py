"""First-answer-wins and exactly-once close under concurrency, within one process (group
commit) and across two (two engines on one database)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack

import pytest

from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import AnswerStatus, ChannelRef, Platform
from bot.quiz import QuizService
from storage.store import SqlStore
from tests.conftest import user
from tests.fakes import RecordingChat
from tests.quiz import asked, quiz_of

# A second bot process on the test's database, posting through `chat`: its service.
Replica = Callable[[RecordingChat], Awaitable[QuizService]]


@pytest.fixture
async def second_store(db_url: str, clock: FakeClock) -> AsyncIterator[SqlStore]:
    """Another engine on the same database: a second bot process, as far as the DB sees."""
    async with SqlStore(db_url, clock=clock) as s:
        yield s


@pytest.fixture
async def replica(
    second_store: SqlStore, bank: QuestionBank, clock: FakeClock
) -> AsyncIterator[Replica]:
    """A second bot process on the same database: its quiz on `second_store`."""
    async with AsyncExitStack() as stack:

        async def make(chat: RecordingChat) -> QuizService:
            made = quiz_of(second_store, {Platform.SLACK: chat}, bank, clock, features=[], seed=3)
            return (await stack.enter_async_context(made)).service

        yield make


async def test_fifty_concurrent_clicks_by_one_user_count_once(
    service: QuizService, channel: ChannelRef
) -> None:
    post = await asked(service, channel)
    alice = user("alice")
    replies = await asyncio.gather(
        *(service.record_answer(post.id, alice, i % 4) for i in range(50))
    )
    statuses = Counter(r.outcome.status for r in replies)
    assert statuses == {AnswerStatus.RECORDED: 1, AnswerStatus.ALREADY_ANSWERED: 49}
    counted = {r.outcome.choice for r in replies}
    assert len(counted) == 1  # every repeat is told the one choice that counts
    assert sum(await service.store.answers.distribution(post.id, 4)) == 1


async def test_concurrent_clicks_through_two_processes_count_once(
    service: QuizService, replica: Replica, channel: ChannelRef
) -> None:
    other = await replica(RecordingChat())
    post = await asked(service, channel)
    alice = user("alice")
    replies = await asyncio.gather(
        *(s.record_answer(post.id, alice, i % 4) for i in range(40) for s in (service, other))
    )
    assert sum(r.outcome.status is AnswerStatus.RECORDED for r in replies) == 1
    reveal = await service.close(post.id)
    assert reveal is not None and reveal.total == 1


async def test_two_concurrent_closers_reveal_exactly_once(
    service: QuizService, chat: RecordingChat, replica: Replica, channel: ChannelRef
) -> None:
    other_chat = RecordingChat()
    other = await replica(other_chat)
    for _ in range(5):
        post = await asked(service, channel)
        await service.record_answer(post.id, user("bob"), 0)
        results = await asyncio.gather(
            service.close(post.id),
            other.close(post.id),
            service.close(post.id),
            other.close(post.id),
        )
        assert sum(r is not None for r in results) == 1
    assert len(chat.of("thread")) + len(other_chat.of("thread")) == 5
    board = await service.leaderboard(channel, None)
    assert sum(r.answered for r in board.rows) == 5  # each post folded into scores once


async def test_answers_racing_a_close_are_either_revealed_or_told_closed(
    service: QuizService, replica: Replica, channel: ChannelRef
) -> None:
    closer = await replica(RecordingChat())
    post = await asked(service, channel)

    async def click(i: int) -> AnswerStatus:
        return (await service.record_answer(post.id, user(f"u{i}"), i % 4)).outcome.status

    clicks = [asyncio.ensure_future(click(i)) for i in range(200)]
    await asyncio.sleep(0)  # let the first clicks reach the writer before the close
    reveal = await closer.close(post.id)
    statuses = Counter(await asyncio.gather(*clicks))
    assert reveal is not None
    assert set(statuses) <= {AnswerStatus.RECORDED, AnswerStatus.CLOSED}
    assert statuses[AnswerStatus.RECORDED] == reveal.total  # no answer lost or added
