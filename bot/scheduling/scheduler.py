"""The `Scheduler`: fires schedule slots, reveals closed windows, resends unsent posts.

Correctness does not come from here. A slot is claimed in storage (one post per
``(schedule, slot)``), closing is a conditional update and a resend takes a lease, so any
number of schedulers on one database post and reveal each slot exactly once. This class
only decides *when to look*:

- `reconcile` (also `tick`) does all the due work for "now": close posts whose window
  passed, post reveals that failed after their close (under a reveal lease), resend
  claimed posts that never got their platform message, and post each schedule's most
  recent slot if it is due and within the grace period (older missed slots are skipped
  and logged). Start-up runs it once, so downtime is caught up.
- In production APScheduler 3.x (`trigger.Wakeups`: in-memory job store, one job per
  schedule, job id = the schedule id, ``coalesce=True``, a misfire grace) wakes
  `reconcile` at each slot, and an interval job wakes it every 30 s. Each pass also plans
  one wake-up at the features' nearest due work (their tickers' `next_event`: a season's
  end, so its podium is posted at that instant, not at the next 30 s pass); a feature
  whose next event moves in this process says so (`SchedulerHooks.on_replan`), other
  replicas re-plan at their next pass. Tests call `tick` after moving a `FakeClock`: the
  same code path, and nothing sleeps.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol, TypeVar

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from bot.clock import Clock, OffsetClock
from bot.domain import ChannelRef, DemoPolicy, Post, Schedule
from bot.lifecycle import Lifecycle
from bot.metrics import QuizMetrics
from bot.quiz import DEFAULT_REVEAL_LEASE, QuizService
from bot.scheduling.claims import Claimed, claim_slots
from bot.scheduling.ports import ScheduleStore
from bot.scheduling.reconcile import can_post, close_due, resend_unsent, retry_reveals
from bot.scheduling.recurrence import Recurrence, RecurrenceError
from bot.scheduling.spec import MAX_DEFAULT_WINDOW, ScheduleRequest, recurrence_of
from bot.scheduling.trigger import TICKERS_JOB, Wakeups

log = logging.getLogger(__name__)

DEFAULT_GRACE = timedelta(hours=1)
DEFAULT_SEND_LEASE = timedelta(minutes=2)
DEFAULT_RECONCILE_EVERY = timedelta(seconds=30)
_MISSED_COUNT_CAP = 1000

T = TypeVar("T")


class Ticker(Protocol):
    async def tick(self, now: datetime) -> object: ...

    async def next_event(self, now: datetime) -> datetime | None: ...


class SchedulerHooks(Protocol):
    """What other features add to a pass (`bot.features.Registry`): their due work (a live
    round's steps) and the channels whose scheduled questions wait meanwhile."""

    @property
    def tickers(self) -> Sequence[Ticker]: ...

    async def held(self, channels: Collection[ChannelRef]) -> set[ChannelRef]: ...

    def on_replan(self, listener: Callable[[], object]) -> None: ...


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    """What one pass did (tests and the console look at it)."""

    posted: tuple[Post, ...] = ()
    revealed: int = 0
    resent: int = 0
    abandoned: int = 0
    skipped: tuple[tuple[int, datetime], ...] = ()  # (schedule id, slot) not posted
    reveals_retried: int = 0  # failed reveals of earlier closes, posted in this pass


@dataclass(slots=True)
class _Entry:
    schedule: Schedule
    recurrence: Recurrence
    next_slot: datetime | None  # the first slot this scheduler has not handled yet


class Scheduler(Lifecycle):
    """Posts scheduled questions and keeps reveals and resends going; an async context
    manager (`initialize` loads the table, catches up, then starts APScheduler)."""

    def __init__(
        self,
        service: QuizService,
        schedules: ScheduleStore,
        *,
        clock: Clock | None = None,
        metrics: QuizMetrics | None = None,
        grace: timedelta = DEFAULT_GRACE,
        send_lease: timedelta = DEFAULT_SEND_LEASE,
        reveal_lease: timedelta = DEFAULT_REVEAL_LEASE,
        reconcile_every: timedelta = DEFAULT_RECONCILE_EVERY,
        use_apscheduler: bool = True,
        drain_timeout: float = 5.0,
        hooks: SchedulerHooks | None = None,
    ) -> None:
        self.hooks = hooks
        self.service = service
        self.store = schedules
        self.clock = clock or service.clock
        self.metrics = metrics or service.metrics
        self.grace = grace
        self.send_lease = send_lease
        self.reveal_lease = reveal_lease
        self.reconcile_every = reconcile_every
        self.use_apscheduler = use_apscheduler
        self.drain_timeout = drain_timeout
        self.running = False
        self._entries: dict[int, _Entry] = {}
        self._by_channel: dict[ChannelRef, set[int]] = {}
        self._fingerprint: tuple[int, int, int] | None = None
        self._wakeups: Wakeups | None = None
        self._load_lock = asyncio.Lock()
        self._wake_task: asyncio.Task[None] | None = None
        self._wake_wanted = False
        self._saved_versions: set[str] = set()  # question versions this process stored

    # -- lifecycle ---------------------------------------------------------------------

    async def initialize(self) -> None:
        """Load every enabled schedule, catch up after downtime, start the trigger."""
        await self.load()
        self.running = True
        try:
            await self.reconcile()
            if self.use_apscheduler:
                self._wakeups = Wakeups(
                    self.wake,
                    offset=self._offset,
                    grace=self.grace,
                    every=self.reconcile_every,
                )
                self._wakeups.start(
                    (sid, e.recurrence, e.next_slot) for sid, e in self._entries.items()
                )
                await self._plan_tickers(self.clock.now())
                if self.hooks is not None:
                    # A season started or ended early here: a pass now plans its end.
                    self.hooks.on_replan(self.wake)
        except BaseException:
            await self.shutdown()
            raise

    async def shutdown(self) -> None:
        self.running = False
        if self._wakeups is not None:
            self._wakeups.shutdown()
            await asyncio.sleep(0)  # AsyncIOScheduler shuts down on the loop's next turn
            self._wakeups = None
        task, self._wake_task = self._wake_task, None
        if task is not None and not task.done():
            # Let in-flight posts finish; a post cut off here stays claimed and is resent.
            done, _ = await asyncio.wait({task}, timeout=self.drain_timeout)
            if not done:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def healthy(self) -> bool:
        """Running, and (in production) APScheduler's loop is up."""
        if not self.running:
            return False
        return not self.use_apscheduler or (self._wakeups is not None and self._wakeups.running)

    # -- the schedule table ------------------------------------------------------------

    async def load(self) -> None:
        """Rebuild the in-memory schedules (and APScheduler jobs) from the table. Unchanged
        schedules keep their place; new ones start after their newest claimed slot."""
        async with self._load_lock:
            fingerprint = await self.store.fingerprint()
            rows = await self.store.enabled()
            fresh = [s for s in rows if (e := self._entries.get(s.id)) is None or e.schedule != s]
            marks: dict[int, datetime] = {}
            if fresh:
                ids = None if len(fresh) == len(rows) else [s.id for s in fresh]
                marks = await self.store.watermarks(ids)
            now = self.clock.now()
            entries: dict[int, _Entry] = {}
            for s in rows:
                old = self._entries.get(s.id)
                if old is not None and old.schedule == s:
                    entries[s.id] = old
                    continue
                try:
                    recurrence = recurrence_of(s)
                except RecurrenceError as exc:
                    log.error("schedule %s is unreadable and is ignored: %s", s.id, exc)
                    continue
                entries[s.id] = _Entry(s, recurrence, recurrence.next_after(marks.get(s.id, now)))
            removed = self._entries.keys() - entries.keys()
            added = [e for sid, e in entries.items() if self._entries.get(sid) is not e]
            self._entries = entries
            self._by_channel = {}
            for e in entries.values():
                self._by_channel.setdefault(e.schedule.channel, set()).add(e.schedule.id)
            self._fingerprint = fingerprint
            self.metrics.schedules.set(len(entries))
            if self._wakeups is not None:
                for sid in removed:
                    self._wakeups.remove(sid)
                for e in added:
                    self._wakeups.set(e.schedule.id, e.recurrence, e.next_slot)

    async def add(self, channel: ChannelRef, request: ScheduleRequest, created_by: str) -> Schedule:
        """Store a new schedule and start firing it."""
        schedule = await self.store.add(
            channel,
            timezone=request.timezone,
            local_time=request.local_time,
            weekdays=request.weekdays,
            cron=request.cron,
            window_seconds=request.window_seconds,
            demo_policy=request.demo_policy or DemoPolicy.AUTO,
            created_by=created_by,
            created_at=self.clock.now(),
        )
        await self.load()
        return schedule

    async def disable(self, channel: ChannelRef, schedule_id: int | None = None) -> list[int]:
        """Turn off one of the channel's schedules (or all); the ids turned off."""
        ids = await self.store.disable(channel, schedule_id)
        if ids:
            await self.load()
        return ids

    async def in_channel(self, channel: ChannelRef) -> list[Schedule]:
        return await self.store.in_channel(channel)

    def upcoming(
        self, schedule: Schedule, count: int = 3, after: datetime | None = None
    ) -> list[datetime]:
        """The schedule's next ``count`` slots (UTC)."""
        entry = self._entries.get(schedule.id)
        recurrence = entry.recurrence if entry is not None else recurrence_of(schedule)
        return recurrence.upcoming(after or self.clock.now(), count)

    def close_time(self, schedule: Schedule, slot: datetime) -> datetime:
        """When a slot's question closes: its explicit window, else the channel's next slot
        (any of its schedules), at most 24 h."""
        if schedule.window_seconds:
            return slot + timedelta(seconds=schedule.window_seconds)
        nexts = [
            n
            for sid in self._by_channel.get(schedule.channel, ())
            if (n := self._entries[sid].recurrence.next_after(slot)) is not None
        ]
        if not nexts:
            return slot + MAX_DEFAULT_WINDOW
        return slot + min(MAX_DEFAULT_WINDOW, min(nexts) - slot)

    # -- due work ----------------------------------------------------------------------

    async def tick(self) -> ReconcileReport:
        """Do whatever is due at the clock's current time."""
        return await self.reconcile(self.clock.now())

    async def reconcile(self, now: datetime | None = None) -> ReconcileReport:
        """Reveal posts whose window passed, resend claimed-but-unsent posts, and post each
        schedule's most recent due slot within the grace period (older ones are skipped)."""
        now = now or self.clock.now()
        if await self.store.fingerprint() != self._fingerprint:
            await self.load()  # another instance added or turned off a schedule
        platforms = set(self.service.chats)
        revealed = await close_due(self.service, self.store, platforms, now)
        retried = await retry_reveals(
            self.service, platforms, now - self.reveal_lease, self.reveal_lease, self.metrics
        )
        resent, abandoned = await resend_unsent(
            self.service, self.store, platforms, now, now - self.send_lease, self.metrics
        )
        for ticker in self.hooks.tickers if self.hooks is not None else ():
            try:
                await ticker.tick(now)
            except Exception:
                log.exception("a feature's due work failed; the next pass tries again")
        posted, skipped = await self._fire_due(now)
        await self._plan_tickers(now)
        return ReconcileReport(
            tuple(posted), revealed, resent, abandoned, tuple(skipped), reveals_retried=retried
        )

    async def next_event(self, now: datetime | None = None) -> datetime | None:
        """The earliest future moment with due work: a slot, a close, a reveal retry, a
        resend."""
        now = now or self.clock.now()
        times = [e.next_slot for e in self._entries.values() if e.next_slot and e.next_slot > now]
        next_close, oldest_unsent = await self.store.next_deadlines()
        if next_close is not None and next_close > now:
            times.append(next_close)
        if oldest_unsent is not None and oldest_unsent + self.send_lease > now:
            times.append(oldest_unsent + self.send_lease)
        unrevealed = await self.service.store.posts.oldest_unrevealed(set(self.service.chats))
        if unrevealed is not None and unrevealed + self.reveal_lease > now:
            times.append(unrevealed + self.reveal_lease)
        for ticker in self.hooks.tickers if self.hooks is not None else ():
            if (at := await ticker.next_event(now)) is not None and at > now:
                times.append(at)
        return min(times, default=None)

    async def _plan_tickers(self, now: datetime) -> None:
        """Wake at the features' nearest due work (one job, re-planned on every pass), so
        a season ends at its instant; without APScheduler (tests), nothing to plan."""
        if self._wakeups is None or self.hooks is None:
            return
        times = []
        for ticker in self.hooks.tickers:
            try:
                at = await ticker.next_event(now)
            except Exception:
                log.exception("a feature's next event is unknown; the 30 s pass looks again")
                continue
            if at is not None and at > now:
                times.append(at)
        if times:
            self._wakeups.at(min(times), TICKERS_JOB)
        else:
            self._wakeups.cancel(TICKERS_JOB)

    async def _fire_due(self, now: datetime) -> tuple[list[Post], list[tuple[int, datetime]]]:
        skipped: list[tuple[int, datetime]] = []
        due: list[tuple[_Entry, datetime]] = []
        ready = [
            e for e in self._entries.values() if e.next_slot is not None and e.next_slot <= now
        ]
        if ready and self.hooks is not None:
            # A channel running a live round keeps its due slot until the round ends.
            held = await self.hooks.held({e.schedule.channel for e in ready})
            ready = [e for e in ready if e.schedule.channel not in held]
        for entry in ready:
            if entry.next_slot is not None and entry.next_slot <= now:
                slot = self._consume_due_slots(entry, now, skipped)
                if slot is not None:
                    due.append((entry, slot))
        if not due:
            return [], skipped
        # Another instance may have turned a schedule off since our last look.
        enabled = await self.store.enabled_among([e.schedule.id for e, _ in due])
        if len(enabled) < len(due):
            self._fingerprint = None
        # Claim every slot first, then send: the platform's pace never delays a claim.
        wanted = []
        for entry, slot in due:
            schedule = entry.schedule
            if schedule.id not in enabled or schedule.channel.platform not in self.service.chats:
                continue  # an instance running that platform posts it
            if not await self._can_post(schedule.channel):
                # Paused: a Slack workspace that uninstalled the app. The slot is skipped,
                # the schedule kept; a reinstall resumes it at its next slot.
                self.metrics.skipped_slots.inc()
                skipped.append((schedule.id, slot))
                continue
            closes_at = self.close_time(schedule, slot)
            if closes_at <= now:
                self.metrics.skipped_slots.inc()
                skipped.append((schedule.id, slot))
                log.warning("schedule %s: slot %s is already over: skipped", schedule.id, slot)
                continue
            wanted.append((schedule, slot, closes_at))
        try:
            claims = await claim_slots(
                self.service, self.store, wanted, self.clock.now(), self._saved_versions
            )
        except Exception:
            log.exception("claiming %s due slot(s) failed; the next pass tries again", len(due))
            for entry, slot in due:  # give the slots back (the grace period still applies)
                if entry.next_slot is None or slot < entry.next_slot:
                    entry.next_slot = slot
            return [], skipped
        for c in claims:
            assert c.post.slot_at is not None
            lag = (c.post.created_at - c.post.slot_at).total_seconds()
            self.metrics.scheduler_lag.set(max(0.0, lag))
        sent = await asyncio.gather(*(self._publish(c) for c in claims))
        return [p for p in sent if p is not None], skipped

    async def _can_post(self, channel: ChannelRef) -> bool:
        return await can_post(self.service, channel)  # `reconcile.can_post`

    def _consume_due_slots(
        self, entry: _Entry, now: datetime, skipped: list[tuple[int, datetime]]
    ) -> datetime | None:
        """Consume every slot up to ``now``; return the latest if it may still be posted.
        Synchronous, so two passes in one process never take the same slot."""
        first = entry.next_slot
        rec = entry.recurrence
        slot = rec.latest_at_or_before(now)
        entry.next_slot = rec.next_after(now)
        sid = entry.schedule.id
        if first is None or slot is None or slot < first:
            return None
        if slot > first:
            missed = _count(rec, first, slot)
            self.metrics.skipped_slots.inc(missed)
            skipped.append((sid, first))
            log.warning(
                "schedule %s: skipped %s%s missed slot(s) from %s (only the latest is posted)",
                sid,
                missed,
                "+" if missed >= _MISSED_COUNT_CAP else "",
                first.isoformat(),
            )
        if now - slot > self.grace:
            self.metrics.skipped_slots.inc()
            skipped.append((sid, slot))
            log.warning(
                "schedule %s: slot %s missed by %s, beyond the %s grace period: skipped",
                sid,
                slot.isoformat(),
                now - slot,
                self.grace,
            )
            return None
        return slot

    async def _publish(self, claim: Claimed) -> Post | None:
        post = claim.post
        try:
            sent = await self.service.publish(post, claim.question, claim.settings)
        except Exception:
            log.exception(
                "schedule %s: sending slot %s failed (the claimed post is resent later)",
                post.schedule_id,
                post.slot_at,
            )
            return None
        if self._wakeups is not None and post.closes_at is not None and self._explicit(post):
            self._wakeups.at(post.closes_at, f"close-{post.id}")
        return sent

    def _explicit(self, post: Post) -> bool:
        """An explicit window (a default one closes at a slot, which wakes us anyway)."""
        entry = self._entries.get(post.schedule_id or 0)
        return entry is not None and bool(entry.schedule.window_seconds)

    # -- APScheduler -------------------------------------------------------------------

    def _offset(self) -> timedelta:
        return self.clock.offset if isinstance(self.clock, OffsetClock) else timedelta(0)

    def resync_triggers(self) -> None:
        """Recompute every job's next run (after the console moved an `OffsetClock`)."""
        if self._wakeups is not None:
            for sid, entry in self._entries.items():
                self._wakeups.set(sid, entry.recurrence)

    @property
    def apscheduler(self) -> AsyncIOScheduler | None:
        """The APScheduler instance while running in production mode (diagnostics, tests)."""
        return self._wakeups.aps if self._wakeups is not None else None

    def jobs(self) -> dict[str, datetime | None]:
        """APScheduler's job ids and next run times (for tests and diagnostics)."""
        return self._wakeups.jobs() if self._wakeups is not None else {}

    def wake(self) -> None:
        """Run a reconcile pass soon; calls while one is pending fold into it."""
        self._wake_wanted = True
        if self.running and (self._wake_task is None or self._wake_task.done()):
            self._wake_task = asyncio.get_running_loop().create_task(self._wake_loop())

    async def _wake_loop(self) -> None:
        while self._wake_wanted and self.running:
            self._wake_wanted = False
            try:
                await self.reconcile()
            except Exception:
                log.exception("scheduler pass failed; the next trigger tries again")


def _count(rec: Recurrence, first: datetime, last: datetime) -> int:
    """Slots in ``[first, last)``, counted up to a cap."""
    n, cursor = 0, first
    while cursor < last and n < _MISSED_COUNT_CAP:
        n += 1
        nxt = rec.next_after(cursor)
        if nxt is None:
            break
        cursor = nxt
    return n


__all__ = ["DEFAULT_GRACE", "DEFAULT_SEND_LEASE", "ReconcileReport", "Scheduler"]
