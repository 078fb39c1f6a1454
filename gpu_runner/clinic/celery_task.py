"""The memory clinic through Celery: the snapshot's bytes travel with the task (capped),
the worker stages them in a private file for its fork server's child, reports progress as
a task state, and the bot forgets the result once read (nothing stays in Redis)."""

from __future__ import annotations

import asyncio
import base64
import queue
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from bot.clinic import (
    ClinicJob,
    ClinicProgress,
    ClinicResult,
    ClinicStage,
    ProgressCallback,
    ProgressRelay,
    Rejection,
    clinic_failed_error,
)
from bot.domain import DemoState, Locale
from gpu_runner.clinic.submit import clinic_result, progress_of, read_snapshot_bytes, stage_snapshot
from gpu_runner.executor import Executor
from gpu_runner.wire import ClinicRequest, ClinicTaskPayload

CLINIC_TASK_NAME = "quizbot.run_clinic"
PROGRESS = "PROGRESS"  # custom task state; its meta is the child's latest progress line
FINISHED = frozenset({"SUCCESS", "FAILURE", "REVOKED"})


def run_clinic_task(
    payload: Mapping[str, Any],
    executor: Executor,
    max_bytes: int,
    report: Callable[[dict[str, Any]], None],
) -> dict[str, Any]:
    """The worker's side: stage the bytes, run the child, delete the file, return the
    child's result document (`wire.ClinicResultPayload`)."""
    name = str(payload.get("name") or "snapshot.pickle")
    data = base64.b64decode(str(payload.get("data_b64") or ""))
    if len(data) > max_bytes:  # the worker's own cap, whatever the bot's
        detail = {"name": name, "size": len(data), "limit": max_bytes}
        return {
            "state": DemoState.FAILED.value,
            "reason": Rejection.TOO_LARGE.value,
            "detail": detail,
        }
    locale = Locale(payload.get("locale", "en"))
    gpu_memory = payload.get("gpu_memory")
    staged = stage_snapshot(ClinicJob(data, locale, name=name), max_bytes)
    del data
    try:
        updates: queue.Queue[Mapping[str, Any] | None] = queue.Queue()
        request = ClinicRequest(
            str(staged.path), name, locale, max_bytes, int(gpu_memory) if gpu_memory else None
        )
        execution = executor.submit_clinic(request, on_progress=updates.put)
        execution.done.add_done_callback(lambda _: updates.put(None))
        # state updates from this thread only: Celery's backend is per thread
        while (doc := updates.get()) is not None:
            report(dict(doc))
        outcome = execution.result()
    finally:
        staged.remove()
    return dict(execution.payload) or {"state": outcome.state.value, "error": outcome.error}


def clinic_task_payload(job: ClinicJob, data: bytes) -> ClinicTaskPayload:
    return {
        "name": job.name,
        "locale": str(job.locale),
        "gpu_memory": job.gpu_memory,
        "data_b64": base64.b64encode(data).decode("ascii"),
    }


async def run_clinic_on_celery(
    demo_app: Any,
    job: ClinicJob,
    progress: ProgressCallback | None,
    *,
    max_bytes: int,
    poll_interval: float,
    wait: float,
) -> ClinicResult:
    """The bot's side (`CeleryRunner.run_clinic`): send, follow progress, read, forget."""
    relay = ProgressRelay(progress)
    data = await asyncio.to_thread(read_snapshot_bytes, job, max_bytes)
    task_id = f"quizbot-clinic-{demo_app.queue}-{uuid.uuid4().hex}"
    payload = clinic_task_payload(job, data)
    del data

    def send(payload: ClinicTaskPayload) -> None:
        demo_app.clinic_task.apply_async(args=[payload], task_id=task_id, queue=demo_app.queue)

    try:
        await asyncio.to_thread(send, payload)
    except Exception as exc:  # the broker is down or refuses the message
        error = f"the runner's broker did not take the job ({type(exc).__name__})"
        raise clinic_failed_error(job.locale, timed_out=False, error=error) from exc
    del payload  # a snapshot's worth of base64: not kept while the worker runs
    relay.push(ClinicProgress(ClinicStage.QUEUED))
    try:
        meta = await _follow(demo_app, task_id, relay, poll_interval, wait)
        if meta is None:
            await asyncio.to_thread(demo_app.app.control.revoke, task_id, terminate=False)
            raise clinic_failed_error(
                job.locale, timed_out=True, error=f"no result within {wait:g} s"
            )
        result = meta.get("result")
        if meta.get("status") != "SUCCESS" or not isinstance(result, Mapping):
            error = f"the Celery task failed: {result!r}"[:300]
            raise clinic_failed_error(job.locale, timed_out=False, error=error)
        clinic = clinic_result(result, job.locale)
        relay.push(ClinicProgress(ClinicStage.DONE))
        return clinic
    finally:
        await asyncio.to_thread(demo_app.app.AsyncResult(task_id).forget)
        await relay.drain()


async def _follow(
    demo_app: Any, task_id: str, relay: ProgressRelay, poll: float, wait: float
) -> Mapping[str, Any] | None:
    """Poll the task's state, passing progress on, until it finishes (None: `wait` passed)."""
    deadline = time.monotonic() + wait
    delay = poll
    while True:
        meta: Mapping[str, Any] = await asyncio.to_thread(
            demo_app.app.backend.get_task_meta, task_id
        )
        status = meta.get("status")
        if status in FINISHED:
            return meta
        info = meta.get("result")
        if status == PROGRESS and isinstance(info, Mapping):
            update = progress_of(info)
            if update is not None:
                relay.push(update)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        await asyncio.sleep(min(delay, remaining))
        delay = min(delay * 1.5, 0.5)  # quick at first, then back off
