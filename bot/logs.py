"""`ThrottledLog`: one line per kind of problem per interval, with a count.

When the database or a platform goes away, every click fails the same way: thousands of
identical tracebacks a second would bury the one line an operator needs and cost CPU the
bot needs to recover. The first occurrence of a problem is logged in full; repeats within
`interval` are counted and summarised once the interval has passed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(slots=True)
class _Seen:
    first_at: float
    suppressed: int = 0


class ThrottledLog:
    def __init__(
        self,
        logger: logging.Logger,
        interval: float = 10.0,
        now: Callable[[], float] = time.monotonic,
        max_keys: int = 1000,
    ) -> None:
        self._log = logger
        self._interval = interval
        self._now = now
        self._max_keys = max_keys
        self._seen: dict[str, _Seen] = {}

    def problem(
        self,
        key: str,
        message: str,
        *args: object,
        exc: BaseException | None = None,
        level: int = logging.ERROR,
    ) -> bool:
        """Log `message` at `level` (with `exc`'s traceback) unless `key` was logged within
        the interval; returns whether it was logged."""
        now = self._now()
        seen = self._seen.get(key)
        if seen is not None and now - seen.first_at < self._interval:
            seen.suppressed += 1
            return False
        if seen is not None and seen.suppressed:
            self._log.warning(
                "%s: %d more in the last %.0f s", key, seen.suppressed, now - seen.first_at
            )
        if len(self._seen) >= self._max_keys:
            self._seen.clear()
        self._seen[key] = _Seen(now)
        self._log.log(level, message, *args, exc_info=exc)
        return True


def problem_key(where: str, exc: BaseException) -> str:
    """A key that groups repeats of one failure: where, the error type, its first line."""
    first = str(exc).strip().splitlines()
    return f"{where}: {type(exc).__name__}: {first[0][:120] if first else ''}"


__all__ = ["ThrottledLog", "problem_key"]
