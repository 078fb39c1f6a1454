"""`TaskSupervisor`: the one place background tasks are started, logged and drained.

Work that outlives the call that started it (an "N answered" edit, a demo run, a click
being answered after its acknowledgement) is spawned here: a failure is logged (never
lost in an unawaited task), and shutdown waits for what is in flight — a click already
recorded still gets its answer — before cancelling the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)


class TaskSupervisor:
    def __init__(self, name: str) -> None:
        self.name = name
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name or self.name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("%s: task %s failed", self.name, task.get_name(), exc_info=exc)

    def __len__(self) -> int:
        return len(self._tasks)

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for the tasks in flight (and any they spawn), up to `timeout` seconds."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self._tasks:
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return
            await asyncio.wait(set(self._tasks), timeout=left)

    async def cancel(self) -> None:
        """Cancel what is still running and wait for it to stop."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def shutdown(self, timeout: float) -> None:
        """Drain for up to `timeout` seconds, then cancel the rest."""
        await self.drain(timeout)
        await self.cancel()


class AckFirst:
    """Acknowledgements before replies: a reply that follows an acknowledgement waits while
    other requests are being acknowledged, and until none has begun for `quiet` seconds (at
    most `hold` seconds in all). On one event loop under a burst of clicks, the
    acknowledgements are what has a deadline (Slack's and Discord's 3 s); the private
    outcomes can come a moment later. The quiet spell matters: a burst's clicks are read a
    few at a time, and between two reads nothing is being acknowledged for a moment, which
    let a thousand outcomes start sending in the middle of the burst."""

    def __init__(
        self,
        hold: float = 2.0,
        quiet: float = 0.01,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.hold = hold
        self.quiet = quiet
        self._clock = clock
        self._sleep = sleep
        self._busy = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._began = -math.inf  # when the latest acknowledgement began

    def enter(self) -> None:
        self._busy += 1
        self._idle.clear()
        self._began = self._clock()

    def leave(self) -> None:
        self._busy -= 1
        if self._busy <= 0:
            self._busy = 0
            self._idle.set()

    async def wait(self) -> None:
        """Until no acknowledgement is pending and none began for `quiet` seconds (or `hold`
        seconds passed)."""
        deadline = self._clock() + self.hold
        while (now := self._clock()) < deadline:
            if self._busy:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._idle.wait(), deadline - now)
                continue
            rest = self._began + self.quiet - now
            if rest <= 0:
                return
            await self._sleep(min(rest, deadline - now))


__all__ = ["AckFirst", "TaskSupervisor"]
