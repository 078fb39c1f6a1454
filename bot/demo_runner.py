"""The `off` demo runner: demos disabled (QUIZBOT_RUNNER=off, or no runner wired)."""

from __future__ import annotations

from bot.domain import DemoJob, DemoResult


class OffRunner:
    enabled = False

    async def submit(self, job: DemoJob) -> None:
        raise RuntimeError("demos are off (QUIZBOT_RUNNER=off)")

    async def result(self, run_id: int, timeout: float) -> DemoResult | None:
        return None
