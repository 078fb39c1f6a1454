"""When schedules fire: local wall-clock time in an IANA zone, across DST (pure, no DB)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.scheduling.recurrence import (
    Recurrence,
    RecurrenceError,
    format_weekdays,
    parse_weekdays,
)

ATHENS = ZoneInfo("Europe/Athens")
BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
MON_FRI = frozenset(range(5))


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def test_athens_0930_weekdays_stay_at_0930_local_across_the_2027_spring_change() -> None:
    rec = Recurrence.daily(ATHENS, time(9, 30), MON_FRI)
    slots = rec.between(utc(2027, 3, 21), utc(2027, 4, 3))
    # Winter (EET, UTC+2) until Sunday 28 March 2027, then summer (EEST, UTC+3).
    assert slots == [utc(2027, 3, d, 7, 30) for d in (22, 23, 24, 25, 26)] + [
        utc(2027, 3, 29, 6, 30),
        utc(2027, 3, 30, 6, 30),
        utc(2027, 3, 31, 6, 30),
        utc(2027, 4, 1, 6, 30),
        utc(2027, 4, 2, 6, 30),
    ]
    assert {s.astimezone(ATHENS).strftime("%H:%M") for s in slots} == {"09:30"}
    assert {s.astimezone(ATHENS).weekday() for s in slots} == set(range(5))


def test_athens_0930_weekdays_stay_at_0930_local_across_the_2027_autumn_change() -> None:
    rec = Recurrence.daily(ATHENS, time(9, 30), MON_FRI)
    slots = rec.between(utc(2027, 10, 24), utc(2027, 11, 6))
    # Summer until Sunday 31 October 2027, then winter.
    assert slots == [utc(2027, 10, d, 6, 30) for d in (25, 26, 27, 28, 29)] + [
        utc(2027, 11, d, 7, 30) for d in (1, 2, 3, 4, 5)
    ]
    assert {s.astimezone(ATHENS).strftime("%H:%M") for s in slots} == {"09:30"}


def test_0230_on_the_spring_forward_day_fires_once_an_hour_later_never_twice() -> None:
    # Berlin skips 02:00-02:59 on 28 March 2027: the slot moves forward by the gap.
    rec = Recurrence.daily(BERLIN, time(2, 30))
    slots = rec.between(utc(2027, 3, 26, 12), utc(2027, 3, 30))
    assert slots == [
        utc(2027, 3, 27, 1, 30),  # 02:30 CET
        utc(2027, 3, 28, 1, 30),  # 03:30 CEST: the only slot that day
        utc(2027, 3, 29, 0, 30),  # 02:30 CEST
    ]
    assert slots[1].astimezone(BERLIN).strftime("%H:%M") == "03:30"
    same_day = [s for s in slots if s.astimezone(BERLIN).date().isoformat() == "2027-03-28"]
    assert len(same_day) == 1


def test_0230_in_new_york_on_its_spring_forward_day_fires_once_at_0330() -> None:
    rec = Recurrence.daily(NEW_YORK, time(2, 30))
    slots = rec.between(utc(2027, 3, 13, 12), utc(2027, 3, 15, 12))
    assert [s.astimezone(NEW_YORK).strftime("%d %H:%M") for s in slots] == ["14 03:30", "15 02:30"]


def test_a_repeated_hour_on_the_fall_back_day_fires_once_at_its_first_occurrence() -> None:
    # Berlin runs 02:00-02:59 twice on 31 October 2027 (CEST, then CET).
    rec = Recurrence.daily(BERLIN, time(2, 30))
    slots = rec.between(utc(2027, 10, 30, 12), utc(2027, 11, 1, 12))
    assert slots == [utc(2027, 10, 31, 0, 30), utc(2027, 11, 1, 1, 30)]


def test_cron_times_that_collide_after_the_gap_fire_once() -> None:
    rec = Recurrence.cron("0,30 2,3 * * *", BERLIN)
    day = rec.between(utc(2027, 3, 27, 23), utc(2027, 3, 28, 12))
    # 02:00/02:30 do not exist and shift onto 03:00/03:30: two slots, not four.
    assert day == [utc(2027, 3, 28, 1, 0), utc(2027, 3, 28, 1, 30)]


def test_latest_at_or_before_mirrors_next_after() -> None:
    rec = Recurrence.daily(ATHENS, time(9, 30), MON_FRI)
    assert rec.latest_at_or_before(utc(2027, 3, 29, 6, 30)) == utc(2027, 3, 29, 6, 30)
    assert rec.latest_at_or_before(utc(2027, 3, 29, 6, 29)) == utc(2027, 3, 26, 7, 30)
    assert rec.next_after(utc(2027, 3, 26, 7, 30)) == utc(2027, 3, 29, 6, 30)


@pytest.mark.parametrize(
    ("expression", "after", "expected"),
    [
        ("30 9 * * 1-5", utc(2027, 1, 1, 10), utc(2027, 1, 4, 9, 30)),  # Fri 1 Jan -> Mon 4th
        ("30 9 * * mon-fri", utc(2027, 1, 1, 10), utc(2027, 1, 4, 9, 30)),
        ("*/15 * * * *", utc(2027, 1, 1, 10, 7), utc(2027, 1, 1, 10, 15)),
        ("0 12 1 jan *", utc(2027, 6, 1), utc(2028, 1, 1, 12)),
        ("0 0 29 2 *", utc(2027, 3, 1), utc(2028, 2, 29)),  # leap day, a year later
        ("0 9 13 * 5", utc(2027, 1, 1), utc(2027, 1, 1, 9)),  # day 13 OR Friday: Fri 1 Jan
        ("0 9 * * 7", utc(2027, 1, 1), utc(2027, 1, 3, 9)),  # 7 is Sunday too
        ("@daily", utc(2027, 1, 1, 0, 0, 1), utc(2027, 1, 2)),
        ("5 4 */10 * *", utc(2027, 1, 2), utc(2027, 1, 11, 4, 5)),
    ],
)
def test_cron_expressions_follow_standard_cron(
    expression: str, after: datetime, expected: datetime
) -> None:
    assert Recurrence.cron(expression, ZoneInfo("UTC")).next_after(after) == expected


def test_a_cron_expression_for_a_date_that_does_not_exist_never_fires() -> None:
    rec = Recurrence.cron("0 9 30 2 *", ZoneInfo("UTC"))
    assert rec.next_after(utc(2027, 1, 1)) is None
    assert rec.latest_at_or_before(utc(2027, 1, 1)) is None


@pytest.mark.parametrize(
    "expression", ["61 * * * *", "0 24 * * *", "* * 0 * *", "* * * 13 *", "*/0 * * * *", "x y"]
)
def test_malformed_cron_expressions_are_refused(expression: str) -> None:
    with pytest.raises(RecurrenceError):
        Recurrence.cron(expression, ZoneInfo("UTC"))


@pytest.mark.parametrize(
    ("text", "days", "canonical"),
    [
        ("mon-fri", {0, 1, 2, 3, 4}, "mon-fri"),
        ("Mon,Wed,Fri", {0, 2, 4}, "mon,wed,fri"),
        ("fri-mon", {4, 5, 6, 0}, "mon,fri-sun"),
        ("weekends", {5, 6}, "sat,sun"),
        ("daily", set(range(7)), "daily"),
        ("tues,thurs", {1, 3}, "tue,thu"),
        ("Δευ-Παρ", {0, 1, 2, 3, 4}, "mon-fri"),
    ],
)
def test_weekday_sets_parse_and_print_canonically(
    text: str, days: set[int], canonical: str
) -> None:
    parsed = parse_weekdays(text)
    assert parsed == frozenset(days)
    assert format_weekdays(parsed) == canonical
    assert parse_weekdays(canonical) == parsed


@pytest.mark.parametrize("text", ["", ",", " , "])
def test_an_empty_weekday_set_is_refused(text: str) -> None:
    with pytest.raises(RecurrenceError, match="empty"):
        parse_weekdays(text)


def test_next_after_a_slot_is_strictly_later() -> None:
    rec = Recurrence.daily(ATHENS, time(9, 30))
    slot = utc(2027, 5, 3, 6, 30)
    assert rec.next_after(slot) == slot + timedelta(days=1)
    assert rec.next_after(slot - timedelta(microseconds=1)) == slot
