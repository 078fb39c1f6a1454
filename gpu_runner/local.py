"""`LocalRunner`: the default `DemoRunner` — demos run in the bot host's fork server."""

from __future__ import annotations

import asyncio

from bot.clinic import (
    DEFAULT_MAX_MB,
    ClinicJob,
    ClinicProgress,
    ClinicResult,
    ClinicStage,
    ProgressCallback,
    ProgressRelay,
    clinic_failed_error,
)
from bot.domain import DemoJob, DemoResult
from bot.lifecycle import Lifecycle
from gpu_runner.clinic.submit import clinic_result, stage_snapshot, threadsafe_progress
from gpu_runner.demos import Registry
from gpu_runner.executor import Execution, Executor, ExecutorConfig
from gpu_runner.wire import ClinicRequest


class LocalRunner(Lifecycle):
    """Runs demos on this host: one at a time per GPU (or one in all without a GPU).

    Also offers what `bot.demos.TrackingRunner` asks for: `started()` (the device line once
    the demo code begins) and `knows()` (a job this process can still deliver; after a
    restart nothing is known and the dispatcher submits again).
    """

    enabled = True

    def __init__(
        self,
        executor: Executor | None = None,
        *,
        config: ExecutorConfig | None = None,
        registry: Registry | None = None,
        clinic_max_bytes: int = DEFAULT_MAX_MB << 20,
    ) -> None:
        self.executor = executor or Executor(config, registry)
        self.clinic_max_bytes = clinic_max_bytes
        self._runs: dict[int, Execution] = {}

    async def initialize(self) -> None:
        await asyncio.to_thread(self.executor.start)

    async def shutdown(self) -> None:
        await asyncio.to_thread(self.executor.close)

    @property
    def device_line(self) -> str:
        return self.executor.info.line

    async def submit(self, job: DemoJob) -> None:
        # Validation errors (unknown demo, parameter out of range) surface here.
        self._runs[job.run_id] = await asyncio.to_thread(self.executor.submit, job)

    async def started(self, run_id: int, timeout: float) -> str | None:
        ex = self._runs.get(run_id)
        if ex is None:
            return None
        try:
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(ex.started)), timeout)
        except TimeoutError:
            return None

    async def result(self, run_id: int, timeout: float) -> DemoResult | None:
        ex = self._runs.get(run_id)
        if ex is None:
            return None
        try:
            result = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(ex.done)), timeout)
        except TimeoutError:
            return None
        self._runs.pop(run_id, None)
        return result

    async def knows(self, run_id: int) -> bool:
        return run_id in self._runs

    async def run_clinic(
        self, job: ClinicJob, progress: ProgressCallback | None = None
    ) -> ClinicResult:
        """The memory clinic in a child of this host's fork server (`bot.ports.ClinicRunner`).

        The child reads the file itself: the snapshot never enters this process, whose
        memory does not grow with its size (bytes handed in are written to a private file).
        """
        relay = ProgressRelay(progress)
        staged = await asyncio.to_thread(stage_snapshot, job, self.clinic_max_bytes)
        try:
            relay.push(ClinicProgress(ClinicStage.QUEUED))
            request = ClinicRequest(
                str(staged.path), job.name, job.locale, self.clinic_max_bytes, job.gpu_memory
            )
            try:
                ex = await asyncio.to_thread(
                    self.executor.submit_clinic, request, threadsafe_progress(relay)
                )
            except RuntimeError as exc:  # the fork server cannot start, or is closed
                raise clinic_failed_error(job.locale, timed_out=False, error=str(exc)) from exc
            outcome = await asyncio.wrap_future(ex.done)
            payload = ex.payload or {"state": outcome.state.value, "error": outcome.error}
            result = clinic_result(payload, job.locale)
            relay.push(ClinicProgress(ClinicStage.DONE))
            return result
        finally:
            await asyncio.to_thread(staged.remove)
            await relay.drain()
