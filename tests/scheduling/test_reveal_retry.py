"""A reveal that failed after its close is posted later, exactly once (SQLite and PostgreSQL).

The close commits first (state, scores, reveal lease); if the thread reply then fails, or
the process stops before it, the reconciler posts the reveal once the lease has expired --
and only one of any number of instances does.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import DateTime, bindparam, text

from bot.clock import FakeClock
from bot.domain import ChannelRef, Locale, MessageRef, PostDraft, PostKind, PostState, Reveal
from bot.features import Feature, Quiz
from bot.quiz import DEFAULT_REVEAL_LEASE, QuizService
from storage.engine import create_engine, upgrade
from storage.store import SqlStore
from tests.conftest import user
from tests.fakes import RecordingChat
from tests.quiz import asked
from tests.scheduling.conftest import Instance, Instances, NamedChat

ALICE, BOB = user("alice"), user("bob")
LEASE = DEFAULT_REVEAL_LEASE


class Listener:
    """Records the reveals the service announces (the demo dispatcher listens the same way)."""

    def __init__(self) -> None:
        self.posts: list[int] = []

    async def __call__(self, reveal: Reveal, thread_locale: Locale) -> None:
        self.posts.append(reveal.post.id)


@pytest.fixture
def listener(basic: Quiz) -> Listener:
    """A feature that records the posts it is told were revealed."""
    listener = Listener()
    basic.registry.add(Feature("listener", on_reveal=[listener]))
    return listener


async def ask_and_answer(service: QuizService, channel: ChannelRef) -> int:
    post = await asked(service, channel)
    question = service.bank.get(post.question_id)
    assert question is not None
    await service.record_answer(post.id, ALICE, question.answer)
    await service.record_answer(post.id, BOB, (question.answer + 1) % question.choice_count)
    return post.id


async def test_failed_reveal_keeps_the_close_and_is_posted_once_after_the_lease(
    listener: Listener, bot: Instance, clock: FakeClock, channel: ChannelRef
) -> None:
    post_id = await ask_and_answer(bot.service, channel)
    bot.chat.fail_threads = 1

    reveal = await bot.service.close(post_id)

    # The close committed (scores folded) and still returns the reveal; nothing was posted.
    assert reveal is not None and list(reveal.distribution).count(1) == 2
    closed = await bot.store.posts.get(post_id)
    assert closed is not None and closed.state is PostState.CLOSED
    board = await bot.service.leaderboard(channel, None)
    assert [r.user for r in board.rows] == [ALICE, BOB]
    assert bot.chat.of("thread") == [] and listener.posts == []

    # Within the lease nobody retries; the scheduler knows when the lease runs out.
    report = await bot.scheduler.tick()
    assert report.reveals_retried == 0 and bot.chat.of("thread") == []
    assert await bot.scheduler.next_event() == clock.now() + LEASE

    clock.advance(LEASE)
    report = await bot.scheduler.tick()
    assert report.reveals_retried == 1
    (thread,) = bot.chat.of("thread")
    assert thread.parent == closed.message
    assert thread.message is not None and "2 answers" in thread.message.body
    assert "alice" in thread.message.body  # first correct, rendered from storage
    last_edit = bot.chat.of("update")[-1]
    assert last_edit.ref == closed.message and last_edit.message is not None
    assert last_edit.message.buttons == ()
    assert listener.posts == [post_id]  # the listeners ran once, with the posted reveal

    clock.advance(LEASE * 5)
    assert (await bot.scheduler.tick()).reveals_retried == 0
    assert len(bot.chat.of("thread")) == 1 and listener.posts == [post_id]
    assert bot.service.metrics.reconciler_retries.value() == 1
    assert bot.service.metrics.reveals.value() == 1
    assert await bot.store.posts.unrevealed(clock.now()) == []


async def test_reveal_that_fails_again_is_retried_at_the_next_lease(
    bot: Instance, clock: FakeClock, channel: ChannelRef
) -> None:
    post_id = await ask_and_answer(bot.service, channel)
    bot.chat.fail_threads = 2  # the close's reply and the first retry fail
    assert await bot.service.close(post_id) is not None

    clock.advance(LEASE)
    assert (await bot.scheduler.tick()).reveals_retried == 0
    assert bot.chat.of("thread") == []
    # The failed retry moved the lease forward: the next try is a full lease later.
    clock.advance(LEASE - timedelta(seconds=1))
    assert (await bot.scheduler.tick()).reveals_retried == 0
    clock.advance(timedelta(seconds=1))
    assert (await bot.scheduler.tick()).reveals_retried == 1
    assert len(bot.chat.of("thread")) == 1
    assert bot.service.metrics.reconciler_retries.value() == 2  # both attempts that held the lease


@pytest.mark.slow
async def test_two_replicas_post_each_failed_reveal_exactly_once(
    instances: Instances, clock: FakeClock, channel: ChannelRef
) -> None:
    a_chat, b_chat = NamedChat("a"), NamedChat("b")
    async with (
        instances(a_chat, seed=1) as a,
        instances(b_chat, seed=2) as b,
    ):
        listeners = Listener()
        for replica in (a, b):
            replica.registry.add(Feature("listener", on_reveal=[listeners]))
        ids = [await ask_and_answer(a.service, channel) for _ in range(8)]
        a_chat.fail_threads = len(ids)  # every reveal of instance a fails
        closes = await asyncio.gather(*(a.service.close(i) for i in ids))
        assert all(r is not None for r in closes) and a_chat.of("thread") == []

        retried = []
        for _ in range(3):  # both race at each pass; later passes find nothing to do
            clock.advance(LEASE)
            reports = await asyncio.gather(a.scheduler.tick(), b.scheduler.tick())
            retried.append(sum(r.reveals_retried for r in reports))
        posts = {i: await a.store.posts.get(i) for i in ids}
    assert retried == [len(ids), 0, 0]
    by_ref = {p.message: i for i, p in posts.items() if p is not None}
    reveals = Counter(by_ref[s.parent] for s in a_chat.of("thread") + b_chat.of("thread"))
    assert reveals == Counter({i: 1 for i in ids})
    assert Counter(listeners.posts) == Counter({i: 1 for i in ids})
    total = a.service.metrics.reconciler_retries.value()
    total += b.service.metrics.reconciler_retries.value()
    assert total == len(ids)


async def test_reveal_lost_when_the_process_stopped_after_the_close_is_posted_after_restart(
    instances: Instances, clock: FakeClock, channel: ChannelRef
) -> None:
    first_chat, second_chat = RecordingChat(), RecordingChat()
    async with instances(first_chat) as first:
        post_id = await ask_and_answer(first.service, channel)
        # The process "dies" right after the close committed: no reveal was sent.
        closed = await first.store.posts.close(post_id, clock.now())
        assert closed is not None and closed.state is PostState.CLOSED
        closed_at = clock.now()
    assert first_chat.of("thread") == []

    # Restarted within the lease: the reveal waits for the lease, then goes out once.
    clock.advance(LEASE / 2)
    async with instances(second_chat) as second:
        assert second_chat.of("thread") == []
        assert await second.scheduler.next_event() == closed_at + LEASE
        clock.advance(LEASE / 2)
        assert (await second.scheduler.tick()).reveals_retried == 1
        assert (await second.scheduler.tick()).reveals_retried == 0
    (thread,) = second_chat.of("thread")
    assert thread.parent == closed.message
    assert thread.message is not None and "2 answers" in thread.message.body

    # A later restart finds nothing to reveal again.
    clock.advance(LEASE * 3)
    third_chat = RecordingChat()
    async with instances(third_chat) as third:
        await third.scheduler.tick()
        assert await third.store.posts.oldest_unrevealed() is None
    assert third_chat.of("thread") == []


async def test_normal_close_posts_once_and_leaves_nothing_to_retry(
    listener: Listener, bot: Instance, clock: FakeClock, channel: ChannelRef
) -> None:
    post_id = await ask_and_answer(bot.service, channel)
    assert await bot.service.close(post_id) is not None
    assert len(bot.chat.of("thread")) == 1 and listener.posts == [post_id]
    assert await bot.store.posts.oldest_unrevealed() is None
    # A retry of a revealed post does nothing, whoever asks and however late.
    clock.advance(LEASE * 10)
    closed = await bot.store.posts.get(post_id)
    assert closed is not None
    assert await bot.service.retry_reveal(closed) is None
    assert (await bot.scheduler.tick()).reveals_retried == 0
    assert len(bot.chat.of("thread")) == 1 and listener.posts == [post_id]
    assert bot.service.metrics.reveals.value() == 1


async def test_practice_and_never_sent_posts_have_no_reveal_to_retry(
    service: QuizService, store: SqlStore, clock: FakeClock, channel: ChannelRef
) -> None:
    question = next(iter(service.bank))
    await store.questions.save(question)
    now = clock.now()

    async def create(kind: PostKind) -> int:
        post = await store.posts.create(
            PostDraft.of(channel, question, Locale.EN, now, now + timedelta(hours=1)),
            kind,
            practice_user=ALICE if kind is PostKind.PRACTICE else None,
        )
        assert post is not None
        return post.id

    practice = await create(PostKind.PRACTICE)
    await store.posts.mark_posted(practice, MessageRef(channel, "practice-1"))
    assert await store.posts.close(practice, now) is not None
    never_sent = await create(PostKind.ASK)
    assert await store.schedules.abandon_unsent(never_sent, now)

    later = now + LEASE * 10
    assert await store.posts.unrevealed(later) == []
    assert await store.posts.oldest_unrevealed() is None
    assert not await store.posts.claim_reveal(practice, later, LEASE)
    assert not await store.posts.claim_reveal(never_sent, later, LEASE)


async def test_claim_reveal_admits_one_caller_per_lease_and_respects_platforms(
    service: QuizService, store: SqlStore, clock: FakeClock, channel: ChannelRef
) -> None:
    post_id = await ask_and_answer(service, channel)
    assert await store.posts.close(post_id, clock.now()) is not None  # holds the lease now
    assert not await store.posts.claim_reveal(post_id, clock.now(), LEASE)
    later = clock.now() + LEASE
    assert [p.id for p in await store.posts.unrevealed(later, platforms=["slack"])] == [post_id]
    assert await store.posts.unrevealed(later, platforms=["discord"]) == []
    assert await store.posts.oldest_unrevealed(["discord"]) is None
    wins = await asyncio.gather(
        *(store.posts.claim_reveal(post_id, later, LEASE) for _ in range(4))
    )
    assert sorted(wins) == [False, False, False, True]
    # The winner holds it for a lease: stale again (listed for `now - LEASE`) a full lease
    # after the claim.
    almost = later + LEASE - timedelta(seconds=1)
    assert await store.posts.unrevealed(almost - LEASE) == []
    assert not await store.posts.claim_reveal(post_id, almost, LEASE)
    assert len(await store.posts.unrevealed(later)) == 1
    assert await store.posts.mark_revealed(post_id, later)
    assert not await store.posts.mark_revealed(post_id, later)  # once
    assert await store.posts.unrevealed(later + LEASE * 10) == []


async def test_posts_closed_before_the_migration_count_as_revealed(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'old.db'}")
    closed_at = datetime(2027, 1, 4, 9)  # naive UTC, as the old schema stored it
    # Typed binds: SQLAlchemy's SQLite DateTime renders the string the columns hold. A raw
    # datetime would go through sqlite3's default adapter, deprecated since Python 3.12.
    when = bindparam("t", type_=DateTime())
    closed = bindparam("closed", type_=DateTime())
    try:
        await upgrade(engine, "0004")
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO channels (id, platform, workspace, channel, locale, timezone,"
                    " demo_policy, created_at) VALUES (1, 'slack', 'T1', 'C1', 'en', 'UTC',"
                    " 'auto', :t)"
                ).bindparams(when),
                {"t": closed_at},
            )
            await conn.execute(
                text(
                    "INSERT INTO question_versions (hash, question_id, data, created_at)"
                    " VALUES ('h', 'q', '{}', :t)"
                ).bindparams(when),
                {"t": closed_at},
            )
            for pid, state in ((1, "closed"), (2, "open")):
                await conn.execute(
                    text(
                        "INSERT INTO posts (id, channel_id, question_id, question_hash,"
                        " correct_choice, choice_count, kind, state, locale, created_at,"
                        " closed_at, message_id, answer_count, send_attempts) VALUES"
                        " (:id, 1, 'q', 'h', 0, 4, 'ask', :state, 'en', :t, :closed, :msg, 0, 0)"
                    ).bindparams(when, closed),
                    {
                        "id": pid,
                        "state": state,
                        "t": closed_at,
                        "closed": closed_at if state == "closed" else None,
                        "msg": f"m{pid}",
                    },
                )
        await upgrade(engine)
        async with engine.connect() as conn:
            rows = (await conn.execute(text("SELECT id, revealed_at FROM posts ORDER BY id"))).all()
    finally:
        await engine.dispose()
    assert rows[0][1] is not None and str(rows[0][1]).startswith("2027-01-04 09:00:00")
    assert rows[1][1] is None  # still open: its reveal comes with its close
