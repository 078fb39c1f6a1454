"""When a schedule fires: a cron-style recurrence evaluated in an IANA time zone.

Both schedule forms (``09:30 Europe/Athens mon-fri`` and a five-field cron expression)
become one `Recurrence`: the sets of minutes, hours, days of month, months and weekdays on
which it fires, read as *local wall-clock time* in its zone. Slots are the UTC instants of
those wall-clock times, so a 09:30 Europe/Athens schedule stays at 09:30 local across
daylight-saving changes (06:30 UTC in summer, 07:30 UTC in winter).

Daylight-saving choices (see docs/scheduling.md):

- Spring forward (the wall-clock time does not exist that day, e.g. 02:30 in Berlin on the
  last Sunday of March): the slot fires once, shifted forward by the length of the gap
  (02:30 -> 03:30 local). A daily question never silently skips a day. Times that land on
  the same instant after shifting fire once.
- Fall back (the wall-clock time occurs twice): the slot fires once, at the first
  occurrence (the daylight-saving one, ``fold=0``).

Everything here is pure: no I/O, no clock.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from bot.i18n import N_

# The longest cron expression accepted: the width of the column that stores it. A list
# longer than that is better written as a range or a step.
MAX_CRON_LENGTH = 128
_CRON_NUMBER = re.compile(r"^[0-9]{1,4}$")  # ASCII only: "²".isdigit() is True, int() fails

# How far to look for the next slot. Five years covers a Feb 29 schedule; an expression
# with no slot in that span is refused as one that never fires.
HORIZON_DAYS = 366 * 5 + 2

DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
SHORT_DAYS = tuple(d[:3] for d in DAY_NAMES)
# Greek day abbreviations (accents stripped before matching).
GREEK_DAYS = ("δευ", "τρι", "τετ", "πεμ", "παρ", "σαβ", "κυρ")
ALL_DAYS = frozenset(range(7))
WEEKDAY_ALIASES: dict[str, frozenset[int]] = {
    "daily": ALL_DAYS,
    "everyday": ALL_DAYS,
    "all": ALL_DAYS,
    "*": ALL_DAYS,
    "weekdays": frozenset(range(5)),
    "workdays": frozenset(range(5)),
    "weekends": frozenset({5, 6}),
    "weekend": frozenset({5, 6}),
}

CRON_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
CRON_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # cron numbering: 0 = Sunday
CRON_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

ALL_MONTH_DAYS = frozenset(range(1, 32))
ALL_MONTHS = frozenset(range(1, 13))
# Recurrences share equal sets (10,000 schedules would otherwise hold 30,000 of them).
_SHARED: dict[frozenset[int], frozenset[int]] = {}


def _shared(values: frozenset[int] | set[int]) -> frozenset[int]:
    key = frozenset(values)
    return _SHARED.setdefault(key, key)


_FIELD_NAMES = (
    N_("minute"),
    N_("hour"),
    N_("day of month"),
    N_("month"),
    N_("day of week"),
)


class RecurrenceError(ValueError):
    """A schedule that cannot be built. ``template`` is an English message marked for
    translation; ``params`` fill it (those named in ``translated`` are translated too)."""

    def __init__(self, template: str, translated: tuple[str, ...] = (), **params: object) -> None:
        self.template = template
        self.params = params
        self.translated = translated
        super().__init__(template.format(**params))


@dataclass(frozen=True, slots=True)
class Recurrence:
    """Local wall-clock slots in ``zone``. Weekdays use Python's numbering (Monday = 0).

    When both the day of month and the day of week are restricted, a day matches if
    either matches (standard cron); otherwise both must.
    """

    zone: ZoneInfo
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    either_day: bool = False

    @property
    def timezone(self) -> str:
        return self.zone.key

    # -- construction ------------------------------------------------------------------

    @classmethod
    def daily(cls, zone: ZoneInfo, at: time, weekdays: frozenset[int] = ALL_DAYS) -> Recurrence:
        if not weekdays:
            raise RecurrenceError(N_("the weekday set is empty"))
        return cls(zone, (at.minute,), (at.hour,), ALL_MONTH_DAYS, ALL_MONTHS, _shared(weekdays))

    @classmethod
    def cron(cls, expression: str, zone: ZoneInfo) -> Recurrence:
        """Parse ``minute hour day-of-month month day-of-week`` (names, ranges, lists,
        steps and the ``@daily``-style macros are accepted)."""
        if len(expression) > MAX_CRON_LENGTH:
            raise RecurrenceError(
                N_(
                    "the cron expression is {length} characters long, the limit is {limit}: "
                    "write long lists as ranges (1-5) or steps (*/15)"
                ),
                length=len(expression),
                limit=MAX_CRON_LENGTH,
            )
        text = CRON_MACROS.get(expression.strip().lower(), expression)
        fields = text.split()
        if len(fields) != 5:
            raise RecurrenceError(
                N_(
                    "the cron expression {expr!r} needs 5 fields "
                    "(minute hour day-of-month month day-of-week), it has {count}"
                ),
                expr=expression,
                count=len(fields),
            )
        minutes = _cron_field(fields[0], 0, 59, _FIELD_NAMES[0])
        hours = _cron_field(fields[1], 0, 23, _FIELD_NAMES[1])
        days = _cron_field(fields[2], 1, 31, _FIELD_NAMES[2])
        months = _cron_field(fields[3], 1, 12, _FIELD_NAMES[3], CRON_MONTHS, base=1)
        cron_days = _cron_field(fields[4], 0, 7, _FIELD_NAMES[4], CRON_DAYS)
        weekdays = frozenset((d - 1) % 7 for d in cron_days)  # cron 0/7 = Sunday -> 6
        dom_restricted = not fields[2].startswith("*")
        dow_restricted = not fields[4].startswith("*")
        return cls(
            zone,
            tuple(sorted(minutes)),
            tuple(sorted(hours)),
            _shared(days),
            _shared(months),
            _shared(weekdays),
            either_day=dom_restricted and dow_restricted,
        )

    # -- evaluation --------------------------------------------------------------------

    def matches_day(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        dom = day.day in self.days
        dow = day.weekday() in self.weekdays
        return (dom or dow) if self.either_day else (dom and dow)

    def _instants(self, day: date) -> Iterator[datetime]:
        """The day's slots as UTC instants, in local wall-clock order. ``fold=0`` maps a
        skipped time forward by the gap and an ambiguous one to its first occurrence."""
        for h in self.hours:
            for m in self.minutes:
                local = datetime(day.year, day.month, day.day, h, m, tzinfo=self.zone)
                yield local.astimezone(UTC)

    def _steady(self, day: date) -> bool:
        """No UTC-offset change during the local day: slots are then in time order."""
        start = datetime.combine(day, time(), self.zone).utcoffset()
        end = datetime.combine(day + timedelta(days=1), time(), self.zone).utcoffset()
        return start == end

    def next_after(self, after: datetime) -> datetime | None:
        """The first slot strictly after ``after`` (UTC), or None within the horizon."""
        after = after.astimezone(UTC)
        day = after.astimezone(self.zone).date() - timedelta(days=1)
        for _ in range(HORIZON_DAYS):
            if self.matches_day(day):
                if self._steady(day):
                    for instant in self._instants(day):
                        if instant > after:
                            return instant
                else:
                    later = [i for i in self._instants(day) if i > after]
                    if later:
                        return min(later)
            day += timedelta(days=1)
        return None

    def latest_at_or_before(self, at: datetime) -> datetime | None:
        """The last slot at or before ``at`` (UTC), or None within the horizon."""
        at = at.astimezone(UTC)
        day = at.astimezone(self.zone).date() + timedelta(days=1)
        for _ in range(HORIZON_DAYS):
            if self.matches_day(day):
                if self._steady(day):
                    for instant in reversed(list(self._instants(day))):
                        if instant <= at:
                            return instant
                else:
                    earlier = [i for i in self._instants(day) if i <= at]
                    if earlier:
                        return max(earlier)
            day -= timedelta(days=1)
        return None

    def upcoming(self, after: datetime, count: int) -> list[datetime]:
        """The next ``count`` slots strictly after ``after``."""
        out: list[datetime] = []
        cursor = after
        while len(out) < count:
            nxt = self.next_after(cursor)
            if nxt is None:
                break
            out.append(nxt)
            cursor = nxt
        return out

    def between(self, start: datetime, end: datetime) -> list[datetime]:
        """Every slot in ``(start, end]``."""
        out: list[datetime] = []
        cursor = start
        while (nxt := self.next_after(cursor)) is not None and nxt <= end:
            out.append(nxt)
            cursor = nxt
        return out


def _cron_field(
    text: str,
    low: int,
    high: int,
    field: str,
    names: tuple[str, ...] = (),
    *,
    base: int = 0,
) -> set[int]:
    def bad() -> RecurrenceError:
        return RecurrenceError(
            N_(
                "the {field} field {value!r} of the cron expression is not valid: use numbers "
                "{low}-{high}, ranges (1-5), lists (1,3,5) or steps (*/15)"
            ),
            translated=("field",),
            field=field,
            value=text,
            low=low,
            high=high,
        )

    def number(token: str) -> int:
        token = token.lower()
        if token in names:
            return names.index(token) + base
        if not _CRON_NUMBER.match(token):
            raise bad()
        value = int(token)
        if not low <= value <= high:
            raise bad()
        return value

    out: set[int] = set()
    for part in text.split(","):
        spec, _, step_text = part.partition("/")
        step = 1
        if step_text:
            # A step longer than the field's range fires once: */10**20 is a typo.
            if not _CRON_NUMBER.match(step_text) or not 1 <= int(step_text) <= high:
                raise bad()
            step = int(step_text)
        if spec == "*":
            first, last = low, high
        elif "-" in spec:
            a, _, b = spec.partition("-")
            first, last = number(a), number(b)
            if first > last:
                raise bad()
        elif spec:
            first = number(spec)
            last = high if step_text else first
        else:
            raise bad()
        out.update(range(first, last + 1, step))
    return out


# -- the "09:30 Europe/Athens mon-fri" form ---------------------------------------------


def _plain(word: str) -> str:
    decomposed = unicodedata.normalize("NFD", word.lower())
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn")


def day_index(word: str) -> int | None:
    """``mon``, ``Monday``, ``tu``, ``thurs``, ``Δευ`` -> Python weekday, else None."""
    w = _plain(word.strip())
    if len(w) < 2:
        return None
    for i, name in enumerate(DAY_NAMES):
        if name.startswith(w):
            return i
    for i, name in enumerate(GREEK_DAYS):
        if w.startswith(name) or (len(w) >= 2 and name.startswith(w)):
            return i
    return None


def parse_weekdays(text: str) -> frozenset[int]:
    """``mon-fri``, ``sat,sun``, ``fri-mon`` (wraps), ``daily``, ``weekdays``."""
    alias = WEEKDAY_ALIASES.get(text.strip().lower())
    if alias is not None:
        return alias
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        first_text, dash, last_text = part.partition("-")
        first = day_index(first_text)
        if first is None:
            raise RecurrenceError(N_("{value!r} is not a day of the week"), value=first_text)
        if not dash:
            out.add(first)
            continue
        last = day_index(last_text)
        if last is None:
            raise RecurrenceError(N_("{value!r} is not a day of the week"), value=last_text)
        i = first
        out.add(i)
        while i != last:
            i = (i + 1) % 7
            out.add(i)
    if not out:
        raise RecurrenceError(N_("the weekday set is empty"))
    return frozenset(out)


def format_weekdays(days: frozenset[int]) -> str:
    """The canonical text stored for a weekday set: ``daily``, ``mon-fri``, ``mon,wed,fri``."""
    if days == ALL_DAYS:
        return "daily"
    ordered = sorted(days)
    runs: list[list[int]] = []
    for d in ordered:
        if runs and d == runs[-1][-1] + 1:
            runs[-1].append(d)
        else:
            runs.append([d])
    parts = []
    for run in runs:
        if len(run) >= 3:
            parts.append(f"{SHORT_DAYS[run[0]]}-{SHORT_DAYS[run[-1]]}")
        else:
            parts += [SHORT_DAYS[d] for d in run]
    return ",".join(parts)


__all__ = [
    "HORIZON_DAYS",
    "MAX_CRON_LENGTH",
    "Recurrence",
    "RecurrenceError",
    "day_index",
    "format_weekdays",
    "parse_weekdays",
]
