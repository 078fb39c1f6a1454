"""SqlDemoRunRepository on SQLite and PostgreSQL: conditional state changes."""

from __future__ import annotations

from datetime import timedelta

from bot.clock import FakeClock
from bot.domain import ChannelRef, DemoResult, DemoState, Locale, MessageRef, Platform
from storage.demo_runs import SqlDemoRunRepository
from storage.store import SqlStore

CHANNEL = ChannelRef(Platform.SLACK, "T1", "C1")


def repo(store: SqlStore) -> SqlDemoRunRepository:
    return SqlDemoRunRepository(store.sessions)


async def test_a_run_is_recorded_queued_with_its_thread(store: SqlStore, clock: FakeClock) -> None:
    runs = repo(store)
    parent = MessageRef(CHANNEL, "q-1")
    run = await runs.create(
        CHANNEL, "fragmentation", Locale.EL, {"blocks": 8}, clock.now(), parent=parent
    )
    assert run.state is DemoState.QUEUED
    assert run.parent == parent and run.status_message is None
    assert run.params == {"blocks": 8} and run.locale is Locale.EL
    await runs.set_status_message(run.id, MessageRef(CHANNEL, "s-1"))
    again = await runs.get(run.id)
    assert again is not None and again.status_message == MessageRef(CHANNEL, "s-1")
    assert again.thread == parent


async def test_state_changes_are_conditional(store: SqlStore, clock: FakeClock) -> None:
    runs = repo(store)
    run = await runs.create(CHANNEL, "fragmentation", Locale.EN, {}, clock.now())
    assert await runs.mark_running(run.id, "NVIDIA H200", clock.now())
    assert not await runs.mark_running(run.id, "again", clock.now())
    assert await runs.requeue(run.id)
    assert await runs.mark_running(run.id, "NVIDIA H200", clock.now())
    result = DemoResult(
        run.id, "fragmentation", DemoState.SUCCEEDED, "NVIDIA H200", "report", {"index": 0.875}
    )
    assert await runs.finish(run.id, result, clock.now() + timedelta(seconds=3))
    assert not await runs.finish(run.id, result, clock.now())
    assert not await runs.requeue(run.id)
    done = await runs.get(run.id)
    assert done is not None
    assert (done.state, done.device, done.report, dict(done.metrics)) == (
        DemoState.SUCCEEDED,
        "NVIDIA H200",
        "report",
        {"index": 0.875},
    )
    assert done.finished_at == clock.now() + timedelta(seconds=3)


async def test_posting_is_claimed_exactly_once(store: SqlStore, clock: FakeClock) -> None:
    runs = repo(store)
    run = await runs.create(CHANNEL, "fragmentation", Locale.EN, {}, clock.now())
    assert await runs.claim_posting(run.id, clock.now())
    assert not await runs.claim_posting(run.id, clock.now())
    await runs.release_posting(run.id)
    assert await runs.claim_posting(run.id, clock.now())


async def test_unfinished_lists_pending_and_unposted_runs(
    store: SqlStore, clock: FakeClock
) -> None:
    runs = repo(store)
    queued = await runs.create(CHANNEL, "a", Locale.EN, {}, clock.now())
    posted = await runs.create(CHANNEL, "b", Locale.EN, {}, clock.now(), post_id=None)
    unposted = await runs.create(CHANNEL, "c", Locale.EN, {}, clock.now())
    for run in (posted, unposted):
        await runs.finish(run.id, DemoResult(run.id, run.demo, DemoState.FAILED, ""), clock.now())
    await runs.claim_posting(posted.id, clock.now())
    assert [r.id for r in await runs.unfinished()] == [queued.id, unposted.id]
