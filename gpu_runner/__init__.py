"""The GPU runner: demo registry, executor (fork server), local and Celery backends.

Importing this package loads neither torch nor matplotlib: only the executor's child
processes do. The composition root uses `open_runner(settings)`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.ports import Runner


@asynccontextmanager
async def open_runner(settings: Settings) -> AsyncIterator[Runner]:
    """The runner QUIZBOT_RUNNER asks for (demos and the memory clinic), started and
    stopped with the bot."""
    from bot.config import RunnerKind

    if settings.runner is RunnerKind.OFF:
        from bot.demo_runner import OffRunner

        yield OffRunner()
        return
    from gpu_runner.demos import default_registry

    registry = default_registry()
    if settings.runner is RunnerKind.CELERY:
        from gpu_runner.celery_runner import CeleryRunner, make_celery_app

        yield CeleryRunner(
            make_celery_app(settings.celery_broker_url),
            registry=registry,
            clinic_max_bytes=settings.clinic_max_bytes,
        )
        return
    from gpu_runner.executor import ExecutorConfig
    from gpu_runner.local import LocalRunner

    async with LocalRunner(
        config=ExecutorConfig(demo_user=settings.demo_user),
        registry=registry,
        clinic_max_bytes=settings.clinic_max_bytes,
    ) as runner:
        yield runner


__all__ = ["open_runner"]
