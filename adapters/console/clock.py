"""``/clock`` in the console: show the bot's time, or travel forward (``/clock +1d``,
``/clock +2h30m``) to try schedules locally.

A jump walks from event to event (each slot, close and resend on the way), running the
scheduler's due work at each, so ``/clock +1d`` posts and reveals every question of that
day in order, as if the time had passed.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from adapters.console.play import ConsoleCommand, ConsoleSession
from bot.clock import OffsetClock
from bot.scheduling import Scheduler, parse_duration

MAX_JUMP = timedelta(days=366)
MAX_STEPS = 10_000
USAGE = "! usage: /clock (show the time) or /clock +1d, +2h, +30m, +1d2h (travel forward)"


async def travel(clock: OffsetClock, scheduler: Scheduler, delta: timedelta) -> int:
    """Move ``clock`` forward by ``delta``, doing the due work at every event on the way.
    Returns how many stops were made."""
    final_offset = clock.offset + delta  # exactly delta ahead, however long the walk takes
    target = clock.now() + delta
    steps = 0
    while steps < MAX_STEPS:
        nxt = await scheduler.next_event(clock.now())
        if nxt is None or nxt > target:
            break
        clock.advance(max(timedelta(0), nxt - clock.now()))
        await scheduler.reconcile()
        steps += 1
    clock.advance(max(timedelta(0), final_offset - clock.offset))
    await scheduler.reconcile()
    scheduler.resync_triggers()
    return steps + 1


def clock_command(clock: OffsetClock, scheduler: Scheduler) -> ConsoleCommand:
    """The ``/clock`` console command (register as ``session.extra["clock"]``)."""

    async def clock_(session: ConsoleSession, args: list[str]) -> None:
        if args:
            delta = parse_duration(args[0]) if args[0].startswith("+") else None
            if delta is None or delta <= timedelta(0) or delta > MAX_JUMP:
                session.say(USAGE)
                return
            await travel(clock, scheduler, delta)
        settings = await session.service.store.settings.get(session.channel)
        session.say(f"(clock: {_show(clock.now(), settings.timezone)}{_ahead(clock.offset)})")

    return clock_


def _show(at: datetime, zone: str) -> str:
    return f"{at.astimezone(ZoneInfo(zone)):%a %Y-%m-%d %H:%M} {zone}"


def _ahead(offset: timedelta) -> str:
    if offset <= timedelta(0):
        return ""
    days, seconds = offset.days, offset.seconds
    hours, minutes = seconds // 3600, seconds % 3600 // 60
    parts = [f"{v}{u}" for v, u in ((days, "d"), (hours, "h"), (minutes, "m")) if v]
    return f", {''.join(parts) or '<1m'} ahead of real time"


__all__ = ["clock_command", "travel"]
