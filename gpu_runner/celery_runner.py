"""Demos through Celery: a worker per GPU host pulls jobs from Redis, results come back
through the result backend.

`make_celery_app()` builds the Celery app and its one task (no module-level app: the
broker URL comes from settings, and tests make their own on a private queue).
`CeleryRunner` is the bot side (`DemoRunner`); `run_worker()` is `quizbot runner worker`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.clinic import DEFAULT_MAX_MB, ClinicJob, ClinicResult, ProgressCallback
from bot.domain import DemoJob, DemoResult, DemoState
from gpu_runner.clinic.celery_task import (
    CLINIC_TASK_NAME,
    PROGRESS,
    run_clinic_on_celery,
    run_clinic_task,
)
from gpu_runner.demos import DemoRequestError, Registry
from gpu_runner.executor import Executor, ExecutorConfig
from gpu_runner.wire import job_from_payload, job_to_payload, result_from_payload, result_to_payload

TASK_NAME = "quizbot.run_demo"
DEFAULT_QUEUE = "quizbot-demos"
RUNNING = "RUNNING"  # custom task state: the demo code has started, meta carries the device
SUBMITTED_KEY = "quizbot-demo-submitted-{queue}-{run_id}"


def task_id(run_id: int, queue: str = DEFAULT_QUEUE) -> str:
    # Deterministic, so a restarted bot finds the same task in the result backend; the
    # queue names the deployment, whose database numbers the runs.
    return f"quizbot-demo-{queue}-{run_id}"


class WorkerExecutor:
    """The worker process's executor, started once and shared by the task threads."""

    def __init__(self, factory: Callable[[], Executor]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._executor: Executor | None = None

    def get(self) -> Executor:
        with self._lock:
            if self._executor is None:
                self._executor = self._factory()
                self._executor.start()
            return self._executor

    def close(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.close()
                self._executor = None


@dataclass(frozen=True, slots=True)
class DemoCeleryApp:
    app: Any  # celery.Celery
    task: Any  # the registered task
    executor: WorkerExecutor
    queue: str
    clinic_task: Any = None  # the memory clinic's task


def make_celery_app(
    broker_url: str,
    backend_url: str | None = None,
    *,
    queue: str = DEFAULT_QUEUE,
    executor: Callable[[], Executor] | None = None,
    result_expires: int = 24 * 3600,
    clinic_max_bytes: int = DEFAULT_MAX_MB << 20,
) -> DemoCeleryApp:
    try:
        from celery import Celery
    except ImportError:
        from bot.errors import MissingExtraError

        raise MissingExtraError("QUIZBOT_RUNNER=celery", "celery") from None
    app = Celery(
        "quizbot-demos", broker=broker_url, backend=backend_url or broker_url, set_as_current=False
    )
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_default_queue=queue,
        # One demo at a time per worker slot; a job whose worker died goes back to the queue.
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        result_expires=result_expires,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
    )
    holder = WorkerExecutor(executor or (lambda: Executor(ExecutorConfig())))

    # shared=False: a shared task would be added to every Celery app made later.
    @app.task(name=TASK_NAME, bind=True, shared=False)  # type: ignore[untyped-decorator]
    def run_demo(self: Any, payload: dict[str, Any]) -> dict[str, Any]:
        job = job_from_payload(payload)
        try:
            execution = holder.get().submit(job)
        except DemoRequestError as exc:
            failed = DemoResult(job.run_id, job.demo, DemoState.FAILED, "", error=str(exc))
            return dict(result_to_payload(failed))
        device = execution.started.result()
        if not execution.done.done():
            self.update_state(
                state=RUNNING, meta={"device": device, "started_at": execution.started_at}
            )
        result = execution.result()
        return dict(result_to_payload(result, execution.started_at))

    @app.task(name=CLINIC_TASK_NAME, bind=True, shared=False)  # type: ignore[untyped-decorator]
    def run_clinic(self: Any, payload: dict[str, Any]) -> dict[str, Any]:
        def report(progress: dict[str, Any]) -> None:
            self.update_state(state=PROGRESS, meta=progress)

        return run_clinic_task(payload, holder.get(), clinic_max_bytes, report)

    return DemoCeleryApp(app, run_demo, holder, queue, run_clinic)


def run_worker(
    demo_app: DemoCeleryApp, concurrency: int | None = None, loglevel: str = "INFO"
) -> int:
    """Start a worker for this host: one task slot per GPU (or one)."""
    info = demo_app.executor.get().info  # start the fork server before taking jobs
    slots = concurrency or info.gpus or 1
    worker = demo_app.app.Worker(
        pool="threads" if slots > 1 else "solo",
        concurrency=slots,
        queues=[demo_app.queue],
        loglevel=loglevel,
        prefetch_multiplier=1,
    )
    try:
        worker.start()
    finally:
        demo_app.executor.close()
    return int(worker.exitcode or 0)


class CeleryRunner:
    """`DemoRunner` over Celery; also `started()` / `knows()` for the dispatcher."""

    enabled = True

    def __init__(
        self,
        demo_app: DemoCeleryApp,
        *,
        registry: Registry | None = None,
        poll_interval: float = 0.02,
        clinic_max_bytes: int = DEFAULT_MAX_MB << 20,
        clinic_wait: float = 600.0,
    ) -> None:
        self._demo = demo_app
        self._registry = registry
        self._poll = poll_interval
        self.clinic_max_bytes = clinic_max_bytes
        self.clinic_wait = clinic_wait  # queue wait included
        self._demos: dict[int, str] = {}

    @property
    def device_line(self) -> str | None:
        return None  # known only once a worker has started the demo

    async def submit(self, job: DemoJob) -> None:
        if self._registry is not None:  # refuse here, before anything is queued
            self._registry.check(job.demo, job.params)
        self._demos[job.run_id] = job.demo
        payload = job_to_payload(job)

        def send() -> None:
            backend = self._demo.app.backend
            backend.set(self._key(job.run_id), job.demo)
            self._demo.task.apply_async(
                args=[payload],
                task_id=task_id(job.run_id, self._demo.queue),
                queue=self._demo.queue,
            )

        await asyncio.to_thread(send)

    def _meta(self, run_id: int) -> Mapping[str, Any]:
        backend = self._demo.app.backend
        meta: Mapping[str, Any] = backend.get_task_meta(task_id(run_id, self._demo.queue))
        return meta

    async def _wait(
        self, run_id: int, timeout: float, states: set[str]
    ) -> Mapping[str, Any] | None:
        deadline = time.monotonic() + timeout
        delay = self._poll
        while True:
            meta = await asyncio.to_thread(self._meta, run_id)
            if meta.get("status") in states:
                return meta
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 1.5, 0.5)  # poll quickly at first, then back off

    async def started(self, run_id: int, timeout: float) -> str | None:
        meta = await self._wait(run_id, timeout, {RUNNING, "SUCCESS", "FAILURE"})
        if meta is None:
            return None
        info = meta.get("result")
        return str(info.get("device") or "") if isinstance(info, Mapping) else ""

    async def result(self, run_id: int, timeout: float) -> DemoResult | None:
        meta = await self._wait(run_id, timeout, {"SUCCESS", "FAILURE", "REVOKED"})
        if meta is None:
            return None
        demo = self._demos.get(run_id) or await asyncio.to_thread(self._submitted, run_id) or ""
        data = meta.get("result")
        if meta.get("status") == "SUCCESS" and isinstance(data, Mapping):
            return result_from_payload(run_id, demo, data)
        return DemoResult(
            run_id, demo, DemoState.FAILED, "", error=f"the Celery task failed: {data!r}"[:500]
        )

    def _key(self, run_id: int) -> str:
        return SUBMITTED_KEY.format(queue=self._demo.queue, run_id=run_id)

    def _submitted(self, run_id: int) -> str | None:
        value = self._demo.app.backend.get(self._key(run_id))
        if value is None:
            return None
        return value.decode() if isinstance(value, bytes) else str(value)

    async def run_clinic(
        self, job: ClinicJob, progress: ProgressCallback | None = None
    ) -> ClinicResult:
        """The memory clinic on a GPU host's worker (`bot.ports.ClinicRunner`): the
        snapshot's bytes go with the task, capped at `clinic_max_bytes`."""
        return await run_clinic_on_celery(
            self._demo,
            job,
            progress,
            max_bytes=self.clinic_max_bytes,
            poll_interval=self._poll,
            wait=self.clinic_wait,
        )

    async def knows(self, run_id: int) -> bool:
        """Submitted to the broker (queued, running or done) and still in the backend."""
        return await asyncio.to_thread(self._submitted, run_id) is not None
