"""Clinic fixtures: one fork server for the session (without torch: the clinic never
needs it, and the server starts in a second)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gpu_runner.executor import Executor, ExecutorConfig


@pytest.fixture(scope="session")
def clinic_executor() -> Iterator[Executor]:
    with Executor(ExecutorConfig(torch=False, clinic_timeout=60.0)) as ex:
        yield ex
