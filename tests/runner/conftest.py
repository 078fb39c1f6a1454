"""Runner fixtures: executors shared per session (a fork server takes a second or three
to start), a test registry with misbehaving demos, and Redis for the Celery test."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterator

import pytest

from gpu_runner.executor import Executor, ExecutorConfig
from tests.runner.fault_demos import SOURCE, gate_path, gate_pid_path

REQUIRE_SERVICES = os.environ.get("QUIZBOT_TEST_REQUIRE_SERVICES") == "1"
REDIS_URL = os.environ.get("QUIZBOT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
# File-name tokens for the gate and pid files in the temporary directory: unique per
# process (parallel test workers, other checkouts' runs), then counted up.
_tokens = itertools.count(os.getpid() * 10**5 + int(time.time() * 1000) % 10**5)


@pytest.fixture(scope="session")
def executor() -> Iterator[Executor]:
    """The real registry, torch preloaded when installed."""
    with Executor(ExecutorConfig(timeout=60.0)) as ex:
        yield ex


@pytest.fixture(scope="session")
def fault_executor() -> Iterator[Executor]:
    """The test registry, without torch (fast to start; demos behave as if it were absent)."""
    with Executor(
        ExecutorConfig(registry=SOURCE, timeout=20.0, torch=False, output_cap=256 * 1024)
    ) as ex:
        yield ex


@pytest.fixture
def token() -> int:
    return next(_tokens)


@pytest.fixture
def open_gate() -> Iterator[Callable[[int], None]]:
    opened: list[int] = []

    def open_(token: int) -> None:
        gate_path(token).touch()
        opened.append(token)

    yield open_
    for t in opened:
        gate_path(t).unlink(missing_ok=True)
        gate_pid_path(t).unlink(missing_ok=True)


@pytest.fixture(scope="session")
def redis_url() -> str:
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except (redis.RedisError, OSError):
        if REQUIRE_SERVICES:
            pytest.fail(f"Redis is required but not reachable at {REDIS_URL}")
        pytest.skip(f"Redis not reachable at {REDIS_URL}")
    return REDIS_URL
