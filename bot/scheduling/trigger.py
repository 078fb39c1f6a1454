"""APScheduler 3.x as the scheduler's alarm clock.

One job per schedule (job id = the schedule id) fires at its slots through `SlotTrigger`,
an interval job fires every 30 s, and one-off jobs fire at explicit close times and at the
features' nearest due work (`TICKERS_JOB`: a season's end, a podium's lease). Every
job only calls ``wake``: what is due is decided by the `Scheduler` from storage, so a
missed, late or doubled wake-up changes nothing. The job store is APScheduler's in-memory
one, rebuilt from the schedules table (its FAQ: job stores must not be shared between
processes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.date import DateTrigger

from bot.scheduling.recurrence import Recurrence

RECONCILE_JOB = "quizbot-reconcile"
TICKERS_JOB = "quizbot-tickers"  # the features' nearest due work, re-planned on each pass
_TINY = timedelta(microseconds=1)


class SlotTrigger(BaseTrigger):  # type: ignore[misc]
    """Fires at each slot of a `Recurrence` (DST-true). ``offset`` maps the bot's clock
    to the system clock (non-zero only for the console's time travel)."""

    __slots__ = ("offset", "recurrence")

    def __init__(self, recurrence: Recurrence, offset: Callable[[], timedelta]) -> None:
        self.recurrence = recurrence
        self.offset = offset

    def get_next_fire_time(
        self, previous_fire_time: datetime | None, now: datetime
    ) -> datetime | None:
        off = self.offset()
        start = previous_fire_time if previous_fire_time is not None else now - _TINY
        slot = self.recurrence.next_after(start + off)
        return None if slot is None else slot - off

    def __str__(self) -> str:
        return f"slots in {self.recurrence.timezone}"


class Wakeups:
    """The APScheduler jobs of one scheduler."""

    def __init__(
        self,
        wake: Callable[[], object],
        *,
        offset: Callable[[], timedelta],
        grace: timedelta,
        every: timedelta,
    ) -> None:
        self._wake = wake
        self._offset = offset
        self._grace = int(grace.total_seconds())
        self._every = max(1, int(every.total_seconds()))
        self.aps = AsyncIOScheduler(timezone=UTC)

    @property
    def running(self) -> bool:
        return bool(self.aps.running)

    def start(self, schedules: Iterable[tuple[int, Recurrence, datetime | None]]) -> None:
        """Register every schedule (id, recurrence, next slot), then start: jobs added
        before the start are not each followed by a pass of APScheduler's own loop."""
        for schedule_id, recurrence, next_slot in schedules:
            self.set(schedule_id, recurrence, next_slot)
        self.aps.add_job(
            self._on_job,
            "interval",
            seconds=self._every,
            id=RECONCILE_JOB,
            name="reconcile",
            coalesce=True,
            max_instances=1,
            replace_existing=True,
        )
        self.aps.start()

    def shutdown(self) -> None:
        """Stop (AsyncIOScheduler completes this on the loop's next turn)."""
        if self.aps.running:
            self.aps.shutdown(wait=False)

    def set(
        self, schedule_id: int, recurrence: Recurrence, next_slot: datetime | None = None
    ) -> None:
        """Add or replace a schedule's job; ``next_slot`` (already computed by the caller)
        saves the trigger computing it again."""
        extra = {} if next_slot is None else {"next_run_time": next_slot - self._offset()}
        self.aps.add_job(
            self._on_job,
            trigger=SlotTrigger(recurrence, self._offset),
            id=str(schedule_id),
            name=f"schedule {schedule_id}",
            coalesce=True,
            misfire_grace_time=self._grace,
            max_instances=1,
            replace_existing=True,
            **extra,
        )

    def remove(self, schedule_id: int) -> None:
        if self.aps.get_job(str(schedule_id)) is not None:
            self.aps.remove_job(str(schedule_id))

    def at(self, when: datetime, job_id: str) -> None:
        """A one-off wake-up (an explicit close time)."""
        self.aps.add_job(
            self._on_job,
            trigger=DateTrigger(run_date=when - self._offset()),
            id=job_id,
            misfire_grace_time=self._grace,
            replace_existing=True,
        )

    def cancel(self, job_id: str) -> None:
        """Drop a one-off wake-up (none is due any more)."""
        if self.aps.get_job(job_id) is not None:
            self.aps.remove_job(job_id)

    def jobs(self) -> dict[str, datetime | None]:
        return {job.id: job.next_run_time for job in self.aps.get_jobs()}

    async def _on_job(self) -> None:
        # A coroutine, so AsyncIOExecutor runs it on the loop, not in a thread.
        self._wake()


__all__ = ["RECONCILE_JOB", "TICKERS_JOB", "SlotTrigger", "Wakeups"]
