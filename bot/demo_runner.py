"""The `off` demo runner: demos and the clinic disabled (QUIZBOT_RUNNER=off, or no runner)."""

from __future__ import annotations

from bot.clinic import ClinicJob, ClinicResult, ProgressCallback, clinic_off_error
from bot.domain import DemoJob, DemoResult


class OffRunner:
    enabled = False

    async def submit(self, job: DemoJob) -> None:
        raise RuntimeError("demos are off (QUIZBOT_RUNNER=off)")

    async def result(self, run_id: int, timeout: float) -> DemoResult | None:
        return None

    async def run_clinic(
        self, job: ClinicJob, progress: ProgressCallback | None = None
    ) -> ClinicResult:
        job.discard()  # nothing is kept of a file that cannot be analysed
        raise clinic_off_error(job.locale)
