"""End to end through Celery: a real worker (in-process thread) on the local Redis."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from bot.demos import DemoDispatcher
from bot.domain import ChannelRef, DemoJob, DemoState, Locale, MessageRef, Platform
from bot.quiz import QuizService
from gpu_runner.celery_runner import CeleryRunner, DemoCeleryApp, make_celery_app
from gpu_runner.demos import SIMULATED_DEVICE, DemoRequestError
from gpu_runner.executor import Executor
from storage.demo_runs import SqlDemoRunRepository
from tests.fakes import RecordingChat
from tests.runner.test_ping import ping

CHANNEL = ChannelRef(Platform.SLACK, "T1", "C1")
pytestmark = [
    pytest.mark.redis,
    # Celery 5.7's Redis result backend still calls redis-py's deprecated `setex`.
    pytest.mark.filterwarnings("ignore:Call to deprecated setex:DeprecationWarning"),
]


@pytest.fixture
def demo_app(redis_url: str, fault_executor: Executor) -> Iterator[DemoCeleryApp]:
    from celery.contrib.testing.worker import start_worker

    # A private queue: parallel test runs on one Redis never take each other's jobs.
    app = make_celery_app(
        redis_url,
        queue=f"quizbot-test-{uuid.uuid4().hex[:8]}",
        executor=lambda: fault_executor,
        result_expires=600,
    )
    with start_worker(
        app.app, pool="solo", perform_ping_check=False, loglevel="WARNING", shutdown_timeout=10
    ):
        yield app


async def test_a_demo_runs_through_a_celery_worker_and_comes_back(
    demo_app: DemoCeleryApp, fault_executor: Executor
) -> None:
    runner = CeleryRunner(demo_app, registry=fault_executor.registry)
    run_id = uuid.uuid4().int % 10**9
    await runner.submit(DemoJob(run_id, "fragmentation", Locale.EN, {"blocks": 8}))
    assert await runner.knows(run_id)
    assert await runner.started(run_id, 20.0) == SIMULATED_DEVICE
    result = await runner.result(run_id, 30.0)
    assert result is not None and result.state is DemoState.SUCCEEDED
    assert result.demo == "fragmentation"
    assert result.metrics["fragmentation_index"] == 0.75
    assert result.png is not None and result.png.startswith(b"\x89PNG")
    # A restarted bot (a new runner object) still finds the result in the backend.
    again = await CeleryRunner(demo_app).result(run_id, 5.0)
    assert again is not None and again.demo == "fragmentation"
    assert again.metrics == result.metrics


def test_ping_gets_the_running_workers_answer(demo_app: DemoCeleryApp, redis_url: str) -> None:
    # The probe's one connection attempt (no retries) still reaches a broker that is up.
    done = ping(redis_url, "--all")
    assert done.returncode == 0, done.stderr
    assert ": ok" in done.stdout


async def test_a_failing_demo_comes_back_as_a_failure(demo_app: DemoCeleryApp) -> None:
    runner = CeleryRunner(demo_app)
    run_id = uuid.uuid4().int % 10**9
    await runner.submit(DemoJob(run_id, "crash", Locale.EN))
    result = await runner.result(run_id, 30.0)
    assert result is not None and result.state is DemoState.FAILED
    assert result.error == "RuntimeError: boom"


async def test_refused_requests_are_never_queued(
    demo_app: DemoCeleryApp, fault_executor: Executor
) -> None:
    runner = CeleryRunner(demo_app, registry=fault_executor.registry)
    with pytest.raises(DemoRequestError):
        await runner.submit(DemoJob(1, "nope", Locale.EN))
    assert not await runner.knows(1)


async def test_dispatcher_posts_a_celery_result_in_the_thread(
    demo_app: DemoCeleryApp, fault_executor: Executor, service: QuizService, chat: RecordingChat
) -> None:
    runs = SqlDemoRunRepository(service.store.sessions)  # type: ignore[attr-defined]
    dispatcher = DemoDispatcher(service, runs, CeleryRunner(demo_app), fault_executor.registry)
    parent = MessageRef(CHANNEL, "question-1")
    run = await dispatcher.request(CHANNEL, "reserved-vs-allocated", Locale.EN, parent=parent)
    await dispatcher.drain()
    (status,) = chat.of("thread")
    edits = [s.message for s in chat.of("update") if s.ref == status.ref]
    assert edits[0] is not None and "simulating (no GPU)…" in edits[0].body
    assert edits[-1] is not None and edits[-1].title == "Demo · reserved-vs-allocated"
    (image,) = chat.of("image")
    assert image.parent == parent
    stored = await runs.get(run.id)
    assert stored is not None and stored.state is DemoState.SUCCEEDED


async def test_structured_inputs_travel_through_celery_to_the_child(
    demo_app: DemoCeleryApp, fault_executor: Executor
) -> None:
    runner = CeleryRunner(demo_app, registry=fault_executor.registry)
    run_id = uuid.uuid4().int % 10**9
    inputs = {
        "kind": "allocator-trace",
        "total_memory": 1 << 30,
        "conf": "",
        "memory_fraction": None,
        "ops": [["malloc", "a", 3 << 20], ["malloc", "b", 1001], ["free", "a"]],
        "ask": "reserved_bytes.all.current",
    }
    await runner.submit(DemoJob(run_id, "allocator-trace", Locale.EN, {"inputs": inputs}))
    result = await runner.result(run_id, 30.0)
    assert result is not None and result.state is DemoState.SUCCEEDED, result
    assert result.metrics["value"] == (20 << 20) + (2 << 20)  # one large, one small segment
