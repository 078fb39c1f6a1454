"""A small bounded set of recently seen keys, to drop Slack's retried deliveries."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable


class RecentKeys:
    """Keys seen in the last `ttl` seconds, at most `capacity` of them (oldest evicted)."""

    def __init__(
        self,
        ttl: float = 600.0,
        capacity: int = 10_000,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl = ttl
        self._capacity = capacity
        self._now = now
        self._seen: OrderedDict[str, float] = OrderedDict()

    def seen(self, key: str) -> bool:
        """True if `key` was seen within the TTL; otherwise remember it and return False."""
        now = self._now()
        while self._seen:
            oldest, at = next(iter(self._seen.items()))
            if now - at < self._ttl and len(self._seen) < self._capacity:
                break
            del self._seen[oldest]
        if key in self._seen:
            return True
        self._seen[key] = now
        return False

    def forget(self, key: str) -> None:
        self._seen.pop(key, None)

    def __len__(self) -> int:
        return len(self._seen)
