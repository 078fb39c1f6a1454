"""Erasure fences (`storage.erasures`): a click received before a member's forget-me
completed is never kept, even one the writer commits afterwards, on another process, from
a cache naming the erased row; a click after it makes a new member."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from bot.clock import FakeClock
from bot.domain import AnswerOutcome, AnswerStatus, ChannelRef, Locale, PostKind
from bot.quiz import QuizService
from bot.render import outcome_message
from storage.erasures import FENCE_RETENTION, STRIPES, member_key, stripe
from storage.members import TOMBSTONE
from storage.models import AnswerRow, ErasureRow, MemberRow
from storage.store import SqlStore
from tests.conftest import user
from tests.quiz import asked

ANN = user("ann")


@pytest.fixture
async def other(db_url: str, clock: FakeClock) -> AsyncIterator[SqlStore]:
    """A second bot process on the same database."""
    async with SqlStore(db_url, clock=clock) as s:
        yield s


async def member_rows(store: SqlStore) -> list[tuple[int, str]]:
    async with store.sessions() as s:
        rows = await s.execute(select(MemberRow.id, MemberRow.user_id).order_by(MemberRow.id))
        return [(mid, uid) for mid, uid in rows]


async def answers_of(store: SqlStore, mid: int) -> int:
    async with store.sessions() as s:
        count = select(func.count()).where(AnswerRow.member_id == mid)
        return (await s.execute(count)).scalar_one()


async def open_post(service: QuizService, channel: ChannelRef) -> int:
    post = await asked(service, channel, kind=PostKind.SCHEDULED)
    return post.id


async def test_a_cached_id_of_an_erased_member_is_never_written_to(
    service: QuizService, other: SqlStore, clock: FakeClock, channel: ChannelRef
) -> None:
    first, second, third = [await open_post(service, channel) for _ in range(3)]
    assert (await service.record_answer(first, ANN, 0)).outcome.status is AnswerStatus.RECORDED
    ((old, _),) = await member_rows(other)  # this process caches ann's id now
    clicked = clock.now()
    clock.advance(timedelta(seconds=1))
    # Erased on the other process: this one's cache still names the row.
    assert (await other.members.forget(ANN)).answers == 1
    store = service.store
    assert isinstance(store, SqlStore)
    # A click received before the erasure finished, committed only now: not kept.
    late = await store.answers.record(second, ANN, 1, clicked, channel)
    assert late.status is AnswerStatus.ERASED
    assert await member_rows(other) == [(old, TOMBSTONE.format(id=old))]
    # A click after it: a new member, never the tombstone.
    clock.advance(timedelta(seconds=1))
    reply = await service.record_answer(third, ANN, 1)
    assert reply.outcome.status is AnswerStatus.RECORDED
    rows = await member_rows(other)
    assert rows[0] == (old, TOMBSTONE.format(id=old)) and rows[1][1] == ANN.user
    assert await answers_of(other, old) == 0 and await answers_of(other, rows[1][0]) == 1


async def test_forgetting_someone_the_quiz_has_not_stored_yet_refuses_their_queued_clicks(
    service: QuizService, other: SqlStore, clock: FakeClock, channel: ChannelRef
) -> None:
    post = await open_post(service, channel)
    clicked = clock.now()
    clock.advance(timedelta(milliseconds=5))
    done = await other.members.forget(ANN)
    assert done.members == 0  # "the quiz stores nothing about you" ...
    store = service.store
    assert isinstance(store, SqlStore)
    outcome = await store.answers.record(post, ANN, 0, clicked, channel)
    assert outcome.status is AnswerStatus.ERASED  # ... and it stays true
    assert [uid for _, uid in await member_rows(other)] == []  # no row created for it
    message = outcome_message(outcome, Locale.EN).body
    assert "forget you" in message and "not kept" in message
    assert "δεν κρατήθηκε" in outcome_message(outcome, Locale.EL).body


async def test_practice_answers_follow_the_same_fence(
    service: QuizService, other: SqlStore, clock: FakeClock, channel: ChannelRef
) -> None:
    from bot.practice import Practice

    store = service.store
    assert isinstance(store, SqlStore)
    post, _ = await Practice(service, store.practice).next_question(channel, ANN, Locale.EN)
    clicked = clock.now()
    clock.advance(timedelta(seconds=1))
    assert (await other.members.forget(ANN)).members == 1
    outcome = await store.answers.record(post.id, ANN, 0, clicked)
    assert outcome.status is AnswerStatus.ERASED
    assert await store.practice.cards(ANN) == []


async def test_fences_are_purged_by_later_erasures_after_the_retention(
    store: SqlStore, clock: FakeClock
) -> None:
    await store.members.forget(ANN)
    clock.advance(FENCE_RETENTION + timedelta(seconds=1))
    await store.members.forget(user("bob"))
    async with store.sessions() as s:
        kept = (await s.execute(select(ErasureRow.user_id))).scalars().all()
    assert kept == [user("bob").user]


def test_every_member_has_one_stripe_of_a_few() -> None:
    keys = [member_key(user(f"u{n}")) for n in range(2000)]
    stripes = {stripe(k) for k in keys}
    assert stripes == set(range(STRIPES))  # spread over all of them, never more
    assert stripe(keys[0]) == stripe(member_key(user("u0")))  # stable across calls


def test_an_erased_click_needs_no_post_to_be_told_why() -> None:
    body = outcome_message(AnswerOutcome(AnswerStatus.ERASED), Locale.EN).body
    assert "Click again to answer as a new player" in body
