"""Waiting for something to become true: poll against a deadline, never a fixed sleep.

`eventually` is the one way tests wait (the fakes' `wait_for`/`until` are wrappers, over
`Changes`); `eventually_sync` is the same for tests that block a thread (the runner's
executor).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any, TypedDict, TypeVar, Unpack, overload

T = TypeVar("T")
# How long a wait lasts by default: generous, since a passing wait costs nothing extra and
# the suite runs on every core of a busy 2-core machine (pytest's own limit is 60 s).
WAIT = 30.0


def _name(check: Callable[[], object], what: str | None) -> str:
    """`what`, else the check's own source line (a lambda) or name."""
    if what:
        return what
    name = getattr(check, "__qualname__", repr(check))
    if name.endswith("<lambda>"):
        with suppress(OSError, TypeError):
            source = inspect.getsource(check).strip()
            return source[source.index("lambda") :] if "lambda" in source else source
    return name


def _failure(
    check: Callable[[], object],
    what: str | None,
    timeout: float,
    detail: Callable[[], object] | None,
) -> AssertionError:
    said = f"timed out after {timeout} s waiting for {_name(check, what)}"
    return AssertionError(f"{said}; {detail()}" if detail else said)


class Waiting(TypedDict, total=False):
    """`eventually`'s options, as its overloads take them (the implementation names each)."""

    timeout: float
    interval: float
    what: str | None
    detail: Callable[[], object] | None
    wake: asyncio.Condition | None


@overload
async def eventually(check: Callable[[], Awaitable[T]], **options: Unpack[Waiting]) -> T: ...


@overload
async def eventually(check: Callable[[], T], **options: Unpack[Waiting]) -> T: ...


async def eventually(
    check: Callable[[], Any],
    *,
    timeout: float = WAIT,
    interval: float = 0.01,
    what: str | None = None,
    detail: Callable[[], object] | None = None,
    wake: asyncio.Condition | None = None,
) -> Any:
    """Until `check()` (plain or async) returns something true; returns that.

    Past `timeout` seconds it raises an AssertionError naming `what` (or the check's
    source) and adding `detail()`. An exception inside `check` ends the wait at once. `wake`: a
    condition notified on every change, so the check reruns at once instead of after
    `interval` (an entry in `wake` checks again, a missed notification costs `interval`).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        left = deadline - loop.time()
        if left <= 0:
            raise _failure(check, what, timeout, detail)
        pause = min(interval, left)
        if wake is None:
            await asyncio.sleep(pause)
            continue
        with suppress(TimeoutError):
            async with asyncio.timeout(pause), wake:
                await wake.wait()


def eventually_sync(
    check: Callable[[], T],
    *,
    timeout: float = WAIT,
    interval: float = 0.01,
    what: str | None = None,
    detail: Callable[[], object] | None = None,
) -> T:
    """`eventually` for a test that may block its thread (no event loop involved)."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() >= deadline:
            raise _failure(check, what, timeout, detail)
        time.sleep(interval)
    return value


class Changes:
    """What a fake server's waits wake on: it calls `notify` after every change it records,
    and `until` re-checks then (and every half second, a backstop)."""

    def __init__(self) -> None:
        self._condition = asyncio.Condition()

    async def notify(self) -> None:
        async with self._condition:
            self._condition.notify_all()

    async def until(
        self,
        check: Callable[[], object],
        *,
        timeout: float = WAIT,
        what: str | None = None,
        detail: Callable[[], object] | None = None,
    ) -> None:
        """`eventually(check)`, woken by every change."""
        await eventually(
            check, timeout=timeout, interval=0.5, what=what, detail=detail, wake=self._condition
        )
