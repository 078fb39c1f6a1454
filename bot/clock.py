"""Injected time. Production uses `SystemClock`; tests advance a `FakeClock`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2027, 1, 4, 9, 0, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("FakeClock needs a timezone-aware start time")

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta) -> datetime:
        self._now += delta
        return self._now

    def set(self, when: datetime) -> None:
        if when.tzinfo is None:
            raise ValueError("FakeClock.set needs a timezone-aware time")
        self._now = when


class OffsetClock:
    """Another clock (the system's by default) plus an offset that only moves forward:
    the console's ``/clock +1d`` time travel, for trying schedules locally."""

    def __init__(self, base: Clock | None = None, offset: timedelta = timedelta(0)) -> None:
        self._base = base or SystemClock()
        self._offset = offset

    @property
    def offset(self) -> timedelta:
        return self._offset

    def now(self) -> datetime:
        return self._base.now() + self._offset

    def advance(self, delta: timedelta) -> datetime:
        if delta < timedelta(0):
            raise ValueError("OffsetClock only moves forward")
        self._offset += delta
        return self.now()
