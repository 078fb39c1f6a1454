"""Reading a schedule from `/quiz schedule set ...` words and from a stored `Schedule`.

``09:30 Europe/Athens mon-fri [window 8h] [demo auto|button|off]`` or
``cron "30 9 * * 1-5" Europe/Athens [window 8h]``. Words may come in any order; a missing
zone means the channel's zone; missing weekdays mean every day. Every problem becomes a
`UserFacingError` that names the bad value and gives an example that works.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from functools import cache, lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from bot.domain import DemoPolicy, Schedule
from bot.errors import UserFacingError
from bot.i18n import Translator
from bot.quoting import cut
from bot.scheduling.recurrence import (
    ALL_DAYS,
    WEEKDAY_ALIASES,
    Recurrence,
    RecurrenceError,
    day_index,
    format_weekdays,
    parse_weekdays,
)

EXAMPLE_TIME = "/quiz schedule set 09:30 Europe/Athens mon-fri"
EXAMPLE_CRON = '/quiz schedule set cron "30 9 * * 1-5" Europe/Athens'
EXAMPLE_WINDOW = "/quiz schedule set 09:30 Europe/Athens mon-fri window 8h"
EXAMPLE_DEMO = "/quiz schedule set 09:30 Europe/Athens mon-fri demo button"

MAX_DEFAULT_WINDOW = timedelta(hours=24)
MIN_WINDOW = timedelta(minutes=1)
MAX_WINDOW = timedelta(days=7)
# parse_duration saturates here: every caller's range is far shorter, so its range check
# (not an overflow in timedelta or in date arithmetic) answers an absurd duration.
DURATION_LIMIT = timedelta(days=36_600)
# Schedule ids are the storage's 64-bit keys; a larger number names no schedule.
MAX_SCHEDULE_ID = 2**63 - 1

_TIME = re.compile(r"^([0-9]{1,2})[:.h]([0-9]{2})$")
_DURATION = re.compile(r"^(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m(?:in)?)?(?:([0-9]+)s)?$")
_SCHEDULE_ID = re.compile(r"^#?([0-9]{1,19})$")


@dataclass(frozen=True, slots=True)
class ScheduleRequest:
    """A validated schedule, ready to store. Exactly one of ``local_time``/``cron``."""

    timezone: str
    local_time: str | None
    weekdays: str | None
    cron: str | None
    window: timedelta | None
    demo_policy: DemoPolicy | None
    recurrence: Recurrence

    @property
    def window_seconds(self) -> int | None:
        return int(self.window.total_seconds()) if self.window is not None else None


def describe(local_time: str | None, weekdays: str | None, cron: str | None, zone: str) -> str:
    """The schedule in command syntax: ``09:30 Europe/Athens mon-fri``."""
    if cron is not None:
        return f'cron "{cron}" {zone}'
    return " ".join(p for p in (local_time, zone, weekdays) if p)


def format_duration(delta: timedelta) -> str:
    """``8h``, ``1h30m``, ``2d``."""
    seconds = int(delta.total_seconds())
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{v}{u}" for v, u in ((days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")) if v]
    return "".join(parts) or "0m"


def parse_duration(text: str) -> timedelta | None:
    """``8h``, ``90m``, ``1h30m``, ``2d``, ``45s``; None if it is not a duration.

    A duration longer than `DURATION_LIMIT` comes back as `DURATION_LIMIT` (it is out of
    every caller's range), never as an overflow."""
    m = _DURATION.match(text.strip().lower().lstrip("+"))
    if not m or not any(m.groups()):
        return None
    if any(g and len(g) > 12 for g in m.groups()):  # before int(): no 10**20-day timedelta
        return DURATION_LIMIT
    d, h, mins, s = (int(g) if g else 0 for g in m.groups())
    seconds = ((d * 24 + h) * 60 + mins) * 60 + s
    return min(timedelta(seconds=min(seconds, 10**13)), DURATION_LIMIT)


def parse_schedule_id(text: str) -> int | None:
    """``3`` or ``#3`` as a schedule id; None if it is not one (negative, huge, not a number)."""
    m = _SCHEDULE_ID.match(text.strip())
    if m is None:
        return None
    value = int(m.group(1))
    return value if 1 <= value <= MAX_SCHEDULE_ID else None


@cache
def _zones_by_lower() -> dict[str, str]:
    return {z.lower(): z for z in available_timezones()}


def find_zone(name: str) -> ZoneInfo | None:
    """An IANA zone by name, case-insensitively; None if there is none."""
    key = _zones_by_lower().get(name.lower())
    if key is None and name.upper() != "UTC":
        return None
    try:
        return ZoneInfo(key or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _looks_like_zone(word: str) -> bool:
    return "/" in word or word[:1].isupper() or word.upper() in ("UTC", "GMT")


def _looks_like_days(word: str) -> bool:
    """``mon-fri``, ``sat,sun``, or a near miss such as ``mon-fir`` (to name the bad day)."""
    if "/" in word:
        return False
    pieces = [p for p in re.split(r"[,\-]", word) if p]
    return any(day_index(p) is not None for p in pieces)


class _Fail(Exception):
    def __init__(self, message: str) -> None:
        self.message = message


def parse_schedule_request(
    words: list[str], t: Translator, default_zone: str, now: datetime
) -> ScheduleRequest:
    """Validate the words after ``schedule set``; raises `UserFacingError`."""
    try:
        return _parse(words, t, default_zone, now)
    except _Fail as fail:
        raise UserFacingError(fail.message) from None


def translate_error(exc: RecurrenceError, t: Translator) -> str:
    params = {k: (t(str(v)) if k in exc.translated else v) for k, v in exc.params.items()}
    return t(exc.template, **params)


def _fail(t: Translator, problem: str, example: str = EXAMPLE_TIME) -> _Fail:
    return _Fail(t("{problem}. Example that works: {example}", problem=problem, example=example))


def _parse(words: list[str], t: Translator, default_zone: str, now: datetime) -> ScheduleRequest:
    at: time | None = None
    zone: ZoneInfo | None = None
    days: frozenset[int] | None = None
    cron: str | None = None
    window: timedelta | None = None
    demo: DemoPolicy | None = None
    i = 0
    while i < len(words):
        word = words[i]
        key, eq, inline = word.lower().partition("=")
        if key in ("window", "demo", "cron"):
            rest = [inline] if eq else words[i + 1 :]
            if not rest or not rest[0].strip():
                raise _fail(t, t("a value is missing after {word!r}", word=word), _EXAMPLES[key])
            if key == "cron":
                cron, used = _cron_words(rest)
            else:
                used = 1
                if key == "window":
                    window = _window(rest[0], t)
                else:
                    demo = _demo(rest[0], t)
            i += 1 + (0 if eq else used)
            continue
        word = cut(word)  # echoed in a refusal at most this long
        if (m := _TIME.match(word)) is not None:
            hour, minute = int(m.group(1)), int(m.group(2))
            if hour > 23 or minute > 59:
                raise _fail(t, _bad_time(word, t))
            if at is not None:
                first = at.strftime("%H:%M")
                raise _fail(t, t("give one time per schedule, not {a} and {b}", a=first, b=word))
            at = time(hour, minute)
        elif _NUMBERISH.fullmatch(word):
            raise _fail(t, _bad_time(word, t))
        elif (found := find_zone(word)) is not None:
            zone = found
        elif not word.strip(" ,-") or word.lower() in WEEKDAY_ALIASES or _looks_like_days(word):
            try:
                days = parse_weekdays(word)
            except RecurrenceError as exc:
                raise _fail(t, translate_error(exc, t)) from None
        elif _looks_like_zone(word):
            raise _fail(t, _unknown_zone(word, t))
        else:
            raise _fail(
                t, t("{value!r} is not a time, a time zone or a set of weekdays", value=word)
            )
        i += 1

    if at is None and cron is None:
        raise _fail(t, t("say when: a time such as 09:30, or cron followed by an expression"))
    if at is not None and cron is not None:
        raise _fail(t, t("give either a time or a cron expression, not both"), EXAMPLE_CRON)
    if cron is not None and days is not None:
        raise _fail(
            t, t("with a cron expression, put the weekdays in its fifth field"), EXAMPLE_CRON
        )
    tz = zone or find_zone(default_zone) or ZoneInfo("UTC")
    if cron is not None:
        try:
            recurrence = Recurrence.cron(cron, tz)
        except RecurrenceError as exc:
            raise _fail(t, translate_error(exc, t), EXAMPLE_CRON) from None
        if recurrence.next_after(now) is None:
            raise _fail(
                t,
                t(
                    "the cron expression {expr!r} never fires "
                    "(no matching date in the next five years)",
                    expr=cut(cron),
                ),
                EXAMPLE_CRON,
            )
    else:
        assert at is not None
        recurrence = Recurrence.daily(tz, at, days if days is not None else ALL_DAYS)
    return ScheduleRequest(
        timezone=tz.key,
        local_time=f"{at:%H:%M}" if at is not None else None,
        weekdays=format_weekdays(days) if days is not None and at is not None else None,
        cron=cron,
        window=window,
        demo_policy=demo,
        recurrence=recurrence,
    )


_NUMBERISH = re.compile(r"[0-9]{1,2}[:.h][0-9]*|[0-9]+")
_EXAMPLES = {"window": EXAMPLE_WINDOW, "demo": EXAMPLE_DEMO, "cron": EXAMPLE_CRON}


def _bad_time(word: str, t: Translator) -> str:
    return t("{value!r} is not a time of day: use HH:MM from 00:00 to 23:59", value=word)


def _cron_words(rest: list[str]) -> tuple[str, int]:
    """The expression after ``cron``: one quoted word or macro, else the next five words.
    Returns it and how many words it took."""
    first = rest[0].strip()
    if " " in first or first.startswith("@"):
        return first, 1
    fields = rest[:5]
    return " ".join(fields), len(fields)


def _window(value: str, t: Translator) -> timedelta:
    delta = parse_duration(value) if value else None
    if delta is None:
        raise _fail(
            t,
            t("{value!r} is not a duration: use e.g. 8h, 90m or 1h30m", value=cut(value)),
            EXAMPLE_WINDOW,
        )
    if not MIN_WINDOW <= delta <= MAX_WINDOW:
        raise _fail(
            t,
            t(
                "an answer window of {value} is out of range: use 1m to 7d",
                value=cut(value),
            ),
            EXAMPLE_WINDOW,
        )
    return delta


def _demo(value: str, t: Translator) -> DemoPolicy:
    try:
        return DemoPolicy(value.lower())
    except ValueError:
        raise _fail(
            t,
            t("{value!r} is not a demo setting: use auto, button or off", value=cut(value)),
            EXAMPLE_DEMO,
        ) from None


def _unknown_zone(word: str, t: Translator) -> str:
    zones = sorted(available_timezones())
    by_city = [z for z in zones if z.lower().rsplit("/", 1)[-1] == word.lower()]
    close = by_city or difflib.get_close_matches(word, zones, n=1, cutoff=0.75)
    if close:
        return t(
            "unknown time zone {value!r} (did you mean {suggestion}?)",
            value=word,
            suggestion=close[0],
        )
    return t("unknown time zone {value!r}: use an IANA name such as Europe/Athens", value=word)


def recurrence_of(schedule: Schedule) -> Recurrence:
    """The recurrence of a stored schedule; raises `RecurrenceError` if it is unreadable."""
    return _recurrence(schedule.timezone, schedule.cron, schedule.local_time, schedule.weekdays)


@lru_cache(maxsize=4096)  # a burst of home cards reads the same few schedules
def _recurrence(
    timezone: str, cron: str | None, local_time: str | None, weekdays: str | None
) -> Recurrence:
    zone = find_zone(timezone)
    if zone is None:
        raise RecurrenceError("unknown time zone {value!r}", value=timezone)
    if cron:
        return Recurrence.cron(cron, zone)
    m = _TIME.match(local_time or "")
    if m is None:
        raise RecurrenceError("{value!r} is not a time of day", value=local_time)
    days = parse_weekdays(weekdays) if weekdays else ALL_DAYS
    return Recurrence.daily(zone, time(int(m.group(1)), int(m.group(2))), days)


__all__ = [
    "EXAMPLE_CRON",
    "EXAMPLE_TIME",
    "MAX_DEFAULT_WINDOW",
    "MAX_SCHEDULE_ID",
    "ScheduleRequest",
    "describe",
    "find_zone",
    "format_duration",
    "parse_duration",
    "parse_schedule_id",
    "parse_schedule_request",
    "recurrence_of",
]
