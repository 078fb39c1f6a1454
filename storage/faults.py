"""Which database errors are worth retrying, and a retry loop with backoff.

A deadlock or serialization failure (another transaction won), a dropped or refused
connection (a restart, a failover, a terminated backend) and SQLite's "database is locked"
usually pass within a second: the same work succeeds when tried again. Anything else (a
constraint, a bad value) fails the same way every time and is not retried.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from bot.errors import StorageUnavailable

T = TypeVar("T")

# PostgreSQL SQLSTATEs: class 40 (transaction rollback), 08 (connection), 57P (operator
# intervention: a terminated backend, a server shutting down or starting).
_DEADLOCK = "40P01"
_SERIALIZATION = "40001"


class RetryObserver(Protocol):
    def retried(self, reason: str) -> None:
        """One more attempt after a transient error (`deadlock`, `connection`, …)."""
        ...

    def failed(self, operation: str) -> None:
        """An operation gave up."""
        ...


def transient_reason(exc: BaseException) -> str | None:
    """``deadlock``, ``serialization``, ``connection`` or ``locked`` for an error that a
    retry may cure; None for one that would fail again."""
    if isinstance(exc, OSError | ConnectionError | TimeoutError):
        return "connection"
    if not isinstance(exc, DBAPIError):
        return None
    if exc.connection_invalidated:
        return "connection"
    state = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    if state == _DEADLOCK:
        return "deadlock"
    if state == _SERIALIZATION:
        return "serialization"
    if isinstance(state, str) and (state.startswith("08") or state.startswith("57P")):
        return "connection"
    text = str(exc.orig).lower()
    if "database is locked" in text or "database is busy" in text:
        return "locked"
    if isinstance(exc, InterfaceError | OperationalError) and state is None:
        return "connection"  # the driver lost the connection before the server answered
    return None


@dataclass(frozen=True, slots=True)
class Backoff:
    """Retry transient errors for up to `budget` seconds, waiting `first`, doubling up to
    `cap` (with jitter, so replicas that failed together do not retry together)."""

    budget: float = 2.0
    first: float = 0.02
    cap: float = 0.4

    async def run(
        self,
        work: Callable[[], Awaitable[T]],
        operation: str,
        observer: RetryObserver | None = None,
    ) -> T:
        deadline = time.monotonic() + self.budget
        delay = self.first
        while True:
            try:
                return await work()
            except Exception as exc:
                reason = transient_reason(exc)
                left = deadline - time.monotonic()
                if reason is None:
                    raise
                if left <= 0:
                    if observer is not None:
                        observer.failed(operation)
                    raise StorageUnavailable(
                        f"the database did not answer ({reason}: {_first_line(exc)})"
                    ) from exc
                if observer is not None:
                    observer.retried(reason)
                await asyncio.sleep(min(delay * (0.5 + random.random()), left))
                delay = min(delay * 2, self.cap)


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()
    return text[0][:200] if text else type(orig).__name__


__all__ = ["Backoff", "RetryObserver", "StorageUnavailable", "transient_reason"]
