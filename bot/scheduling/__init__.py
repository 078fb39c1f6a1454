"""Scheduled daily questions: time-zone-true recurrences, the scheduler and its commands.

- `recurrence`: when a schedule fires, in its IANA zone (pure; DST choices documented).
- `spec`: reading ``09:30 Europe/Athens mon-fri [window 8h]`` and cron expressions.
- `scheduler`: `Scheduler` and its reconciler (storage constraints give exactly-once).
- `claims`: claiming many due slots in a few statements.
- `trigger`: APScheduler 3.x as the wake-up source (`SlotTrigger`, `Wakeups`).
- `commands`: ``/quiz schedule set|list|off [id]``.
"""

from bot.scheduling.commands import feature, fire_time, schedule_feature
from bot.scheduling.ports import ScheduleStore
from bot.scheduling.recurrence import Recurrence, RecurrenceError
from bot.scheduling.scheduler import DEFAULT_GRACE, DEFAULT_SEND_LEASE, ReconcileReport, Scheduler
from bot.scheduling.spec import (
    ScheduleRequest,
    describe,
    format_duration,
    parse_duration,
    parse_schedule_request,
    recurrence_of,
)
from bot.scheduling.trigger import SlotTrigger, Wakeups

__all__ = [
    "DEFAULT_GRACE",
    "DEFAULT_SEND_LEASE",
    "ReconcileReport",
    "Recurrence",
    "RecurrenceError",
    "ScheduleRequest",
    "ScheduleStore",
    "Scheduler",
    "SlotTrigger",
    "Wakeups",
    "describe",
    "feature",
    "fire_time",
    "format_duration",
    "parse_duration",
    "parse_schedule_request",
    "recurrence_of",
    "schedule_feature",
]
