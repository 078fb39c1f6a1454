"""The answer writer under what production does to it: replicas clicking in opposite
orders, rolled-back batches, one bad post, ids beyond the database's range, transient
errors, a database that does not answer, and a shutdown with clicks queued.

Faults are real: a second engine is a second process as far as the database sees; a bad
post is made bad by a trigger in the database; a transient error is a trigger raising
PostgreSQL's own deadlock SQLSTATE.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import text

from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.config import Settings
from bot.domain import AnswerStatus, ChannelRef, Platform, Post
from bot.errors import StorageUnavailable
from bot.quiz import QuizService
from storage._session import sessionmaker
from storage.answers import SqlAnswerRepository
from storage.engine import create_engine
from storage.faults import Backoff
from storage.refs import RefResolver
from storage.store import SqlStore
from tests.conftest import user
from tests.fakes import RecordingChat
from tests.quiz import asked, quiz_of


class Observer:
    def __init__(self) -> None:
        self.retries: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self.retried_twice = asyncio.Event()

    def retried(self, reason: str) -> None:
        self.retries[reason] += 1
        if self.retries[reason] >= 2:
            self.retried_twice.set()

    def failed(self, operation: str) -> None:
        self.failures[operation] += 1


@pytest.fixture
async def replica(db_url: str, clock: FakeClock) -> AsyncIterator[SqlStore]:
    async with SqlStore(db_url, clock=clock, observer=Observer()) as s:
        yield s


async def open_posts(service: QuizService, n: int) -> list[Post]:
    posts = []
    for i in range(n):
        post = await asked(service, ChannelRef(Platform.SLACK, "T1", f"C{i}"))
        posts.append(post)
    return posts


async def test_replicas_clicking_posts_in_opposite_orders_never_deadlock(
    service: QuizService, replica: SqlStore, clock: FakeClock
) -> None:
    posts = await open_posts(service, 4)
    mine = service.store.answers
    theirs = replica.answers
    assert isinstance(mine, SqlAnswerRepository)
    mine.observer = here = Observer()
    there = theirs.observer
    assert isinstance(there, Observer)

    async def burst(repo: SqlAnswerRepository, order: list[Post], who: str) -> list[object]:
        calls = [
            repo.record(p.id, user(f"{who}{i}"), i % 4, clock.now(), p.channel)
            for i in range(60)
            for p in order
        ]
        return await asyncio.gather(*calls, return_exceptions=True)

    a, b = await asyncio.gather(burst(mine, posts, "a"), burst(theirs, list(reversed(posts)), "b"))
    failures = [r for r in [*a, *b] if isinstance(r, BaseException)]
    assert failures == []
    assert {r.status for r in [*a, *b]} == {AnswerStatus.RECORDED}  # type: ignore[union-attr]
    assert here.retries["deadlock"] == 0 and there.retries["deadlock"] == 0
    for p in posts:
        assert sum(await service.store.answers.distribution(p.id, 4)) == 120


async def test_a_rolled_back_transaction_leaves_no_member_id_in_the_cache(
    service: QuizService, channel: ChannelRef, clock: FakeClock
) -> None:
    post = await asked(service, channel)
    store = service.store
    assert isinstance(store, SqlStore)
    ghost = user("ghost")
    with pytest.raises(RuntimeError):
        async with store.sessions.begin() as s:
            await store.refs.member_ids(s, [ghost])
            raise RuntimeError("the batch failed after reading the member's id")
    # The id read in the rolled-back transaction names no row: using it would fail the
    # member's every later click (and the batches they are in).
    reply = await service.record_answer(post.id, ghost, 1)
    assert reply.outcome.status is AnswerStatus.RECORDED
    (answer,) = await store.answers.for_post(post.id)
    assert answer.user.user == ghost.user


async def test_post_ids_beyond_the_database_range_fail_alone(
    service: QuizService, channel: ChannelRef, clock: FakeClock
) -> None:
    post = await asked(service, channel)
    repo = service.store.answers
    good = [repo.record(post.id, user(f"u{i}"), 0, clock.now(), channel) for i in range(40)]
    bad = [repo.record(2**63 + i, user(f"x{i}"), 0, clock.now(), channel) for i in range(3)]
    results = await asyncio.gather(*good, *bad)
    assert [r.status for r in results[:40]] == [AnswerStatus.RECORDED] * 40
    assert [r.status for r in results[40:]] == [AnswerStatus.UNKNOWN_POST] * 3
    # The same users answer again fine: nobody is locked out.
    again = await repo.record(post.id, user("x0"), 1, clock.now(), channel)
    assert again.status is AnswerStatus.RECORDED


async def _fail_answers_on(store: SqlStore, post_id: int, sqlstate: str | None = None) -> None:
    """A trigger that makes inserting an answer on `post_id` fail (a bad post)."""
    async with store.engine.begin() as conn:
        if store.dialect == "sqlite":
            await conn.execute(
                text(
                    "CREATE TRIGGER bad_post BEFORE INSERT ON answers "
                    f"WHEN NEW.post_id = {post_id} BEGIN SELECT RAISE(ABORT, 'bad post'); END"
                )
            )
            return
        state = sqlstate or "P0001"
        await conn.execute(
            text(
                "CREATE OR REPLACE FUNCTION bad_post() RETURNS trigger AS $$ BEGIN "
                f"IF NEW.post_id = {post_id} THEN "
                f"RAISE EXCEPTION 'bad post' USING ERRCODE = '{state}'; END IF; "
                "RETURN NEW; END $$ LANGUAGE plpgsql"
            )
        )
        await conn.execute(
            text(
                "CREATE TRIGGER bad_post BEFORE INSERT ON answers "
                "FOR EACH ROW EXECUTE FUNCTION bad_post()"
            )
        )


async def _drop_trigger(store: SqlStore) -> None:
    async with store.engine.begin() as conn:
        if store.dialect == "sqlite":
            await conn.execute(text("DROP TRIGGER bad_post"))
        else:
            await conn.execute(text("DROP TRIGGER bad_post ON answers"))


async def test_one_bad_post_fails_alone_and_its_users_can_answer_afterwards(
    service: QuizService, clock: FakeClock
) -> None:
    good, bad = await open_posts(service, 2)
    store = service.store
    assert isinstance(store, SqlStore)
    await _fail_answers_on(store, bad.id)
    repo = store.answers
    calls = [
        repo.record(p.id, user(f"u{i}"), 0, clock.now()) for i in range(20) for p in (good, bad)
    ]
    results = await asyncio.gather(*calls, return_exceptions=True)
    on_good = [r for r in results[0::2]]
    on_bad = [r for r in results[1::2]]
    assert all(not isinstance(r, BaseException) for r in on_good)
    assert {r.status for r in on_good} == {AnswerStatus.RECORDED}  # type: ignore[union-attr]
    assert all(isinstance(r, Exception) for r in on_bad)
    await _drop_trigger(store)
    # Nobody stays locked out: the bad post's users answer once it is fixed.
    for i in range(20):
        fixed = await repo.record(bad.id, user(f"u{i}"), 1, clock.now())
        assert fixed.status is AnswerStatus.RECORDED


@pytest.mark.postgres
async def test_a_deadlock_is_retried_before_anyone_is_told(
    service: QuizService, clock: FakeClock, db_url: str
) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("PostgreSQL's deadlock SQLSTATE")
    (post,) = await open_posts(service, 1)
    store = service.store
    assert isinstance(store, SqlStore)
    observer = Observer()
    store.answers.observer = observer
    await _fail_answers_on(store, post.id, sqlstate="40P01")

    async def heal() -> None:  # the "other transaction" goes away after the first attempts
        await observer.retried_twice.wait()
        await _drop_trigger(store)

    healer = asyncio.create_task(heal())
    outcomes = await asyncio.gather(
        *(store.answers.record(post.id, user(f"u{i}"), 2, clock.now()) for i in range(10))
    )
    await healer
    assert {o.status for o in outcomes} == {AnswerStatus.RECORDED}
    assert observer.retries["deadlock"] >= 2 and observer.failures == Counter()


async def test_a_database_that_does_not_answer_fails_the_clicks_within_the_budget(
    clock: FakeClock,
) -> None:
    # Nothing listens on port 9: every connection is refused.
    engine = create_engine("postgresql+asyncpg://postgres@127.0.0.1:9/none")
    observer = Observer()
    repo = SqlAnswerRepository(
        sessionmaker(engine),
        RefResolver("postgresql"),
        backoff=Backoff(budget=0.3),
        observer=observer,
    )
    loop = asyncio.get_running_loop()
    started = loop.time()
    results = await asyncio.gather(
        *(repo.record(1, user(f"u{i}"), 0, clock.now()) for i in range(25)),
        return_exceptions=True,
    )
    assert all(isinstance(r, StorageUnavailable) for r in results)
    assert "did not answer" in str(results[0])
    assert loop.time() - started < 5
    assert observer.retries["connection"] >= 1 and observer.failures["record answers"] >= 1
    await repo.shutdown()
    await engine.dispose()


async def test_shutdown_resolves_every_queued_click(
    service: QuizService, channel: ChannelRef, clock: FakeClock
) -> None:
    post = await asked(service, channel)
    repo = service.store.answers
    assert isinstance(repo, SqlAnswerRepository)
    pending = [
        asyncio.ensure_future(repo.record(post.id, user(f"u{i}"), 0, clock.now()))
        for i in range(300)
    ]
    await asyncio.sleep(0)  # queued
    await repo.shutdown(timeout=10)
    done, not_done = await asyncio.wait(pending, timeout=5)
    assert not_done == set()
    recorded = [f for f in done if not f.exception()]
    refused = [f for f in done if isinstance(f.exception(), StorageUnavailable)]
    assert len(recorded) + len(refused) == 300
    stored = await repo.for_post(post.id)
    assert len(stored) == len(recorded)
    with pytest.raises(StorageUnavailable, match="shutting down"):
        await repo.record(post.id, user("late"), 0, clock.now())


async def test_a_click_on_another_channels_post_is_refused_and_stores_nothing(
    service: QuizService, channel: ChannelRef, clock: FakeClock
) -> None:
    post = await asked(service, channel)
    elsewhere = ChannelRef(Platform.SLACK, "T1", "C-OTHER")
    other_team = ChannelRef(Platform.SLACK, "T2", channel.channel)
    for where in (elsewhere, other_team):
        outcome = await service.store.answers.record(post.id, user("eve"), 0, clock.now(), where)
        assert outcome.status is AnswerStatus.WRONG_CHANNEL
    assert await service.store.answers.for_post(post.id) == []
    ok = await service.store.answers.record(post.id, user("eve"), 0, clock.now(), channel)
    assert ok.status is AnswerStatus.RECORDED


async def test_the_ask_cooldown_holds_across_replicas(
    service: QuizService,
    replica: SqlStore,
    bank: QuestionBank,
    clock: FakeClock,
    channel: ChannelRef,
) -> None:
    cooldown = timedelta(seconds=30)
    service.ask_cooldown = cooldown
    replica_quiz = quiz_of(
        replica,
        {Platform.SLACK: RecordingChat()},
        bank,
        clock,
        features=[],
        settings=Settings(ask_cooldown=30),
        seed=1,
    )
    async with replica_quiz as quiz:
        other = quiz.service
        results = await asyncio.gather(
            *(s.ask(channel) for s in (service, other, service, other)), return_exceptions=True
        )
        posted = [r for r in results if isinstance(r, Post)]
        refused = [r for r in results if isinstance(r, Exception)]
        assert len(posted) == 1 and len(refused) == 3
        # Each is told why: the cooldown (even while the question is still being sent).
        assert all("works again in" in str(r) for r in refused)
        clock.advance(cooldown)
        assert isinstance(await other.ask(channel), Post)


async def test_one_batch_over_many_posts_gives_each_click_its_own_outcome(
    service: QuizService, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    a, b, c = await open_posts(service, 3)
    repo = service.store.answers
    before = await repo.record(b.id, user("bea"), 2, clock.now(), b.channel)
    assert before.status is AnswerStatus.RECORDED
    assert await service.close(c.id) is not None
    elsewhere = ChannelRef(Platform.SLACK, "T2", a.channel.channel)
    # Gathered: every click is queued before the writer runs, so one batch takes them all.
    results = await asyncio.gather(
        repo.record(a.id, user("ann"), 1, clock.now(), a.channel),
        repo.record(a.id, user("ann"), 3, clock.now(), a.channel),
        repo.record(a.id, user("abe"), 9, clock.now(), a.channel),
        repo.record(a.id, user("eve"), 0, clock.now(), elsewhere),
        repo.record(b.id, user("bea"), 0, clock.now(), b.channel),
        repo.record(b.id, user("bob"), 0, clock.now(), b.channel),
        repo.record(c.id, user("cy"), 0, clock.now(), c.channel),
        repo.record(2**40, user("dee"), 0, clock.now(), a.channel),
    )
    got = [(r.status, r.choice, r.answer_count) for r in results]
    assert got[:6] == [
        (AnswerStatus.RECORDED, 1, 1),
        (AnswerStatus.ALREADY_ANSWERED, 1, 1),  # the choice that counts: the first
        (AnswerStatus.INVALID_CHOICE, None, 1),
        (AnswerStatus.WRONG_CHANNEL, None, 0),
        (AnswerStatus.ALREADY_ANSWERED, 2, 2),  # answered before the batch
        (AnswerStatus.RECORDED, 0, 2),
    ]
    assert results[6].status is AnswerStatus.CLOSED
    assert results[7].status is AnswerStatus.UNKNOWN_POST
    assert {r.post.id for r in results[:3] if r.post} == {a.id}
    assert [x.user.user for x in await repo.for_post(a.id)] == ["UANN"]
    assert sorted(x.user.user for x in await repo.for_post(b.id)) == ["UBEA", "UBOB"]
    assert (await service.store.posts.get(b.id)).answer_count == 2  # type: ignore[union-attr]
    assert "failed together" not in caplog.text  # every post in one go, none alone
