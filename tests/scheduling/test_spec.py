"""Reading `/quiz schedule set ...` words (pure)."""

from __future__ import annotations

import re
import shlex
from datetime import UTC, datetime, timedelta

import pytest

from bot.domain import DemoPolicy, Locale
from bot.errors import UserFacingError
from bot.i18n import translator
from bot.scheduling import parse_duration, parse_schedule_request
from bot.scheduling.spec import DURATION_LIMIT, parse_schedule_id
from tests.hostile import assert_bounded, measure

EN = translator(Locale.EN)
NOW = datetime(2027, 3, 20, 12, tzinfo=UTC)


def parse(text: str, default_zone: str = "UTC"):  # type: ignore[no-untyped-def]
    return parse_schedule_request(shlex.split(text), EN, default_zone, NOW)


def test_time_zone_and_weekdays_in_any_order_with_window_and_demo() -> None:
    a = parse("09:30 Europe/Athens mon-fri window 8h demo button")
    b = parse("mon-fri window=8h Europe/Athens demo=button 9:30")
    assert a == b
    assert (a.timezone, a.local_time, a.weekdays, a.cron) == (
        "Europe/Athens",
        "09:30",
        "mon-fri",
        None,
    )
    assert a.window == timedelta(hours=8) and a.demo_policy is DemoPolicy.BUTTON


def test_zone_defaults_to_the_channels_and_weekdays_to_every_day() -> None:
    req = parse("07:05", default_zone="America/New_York")
    assert req.timezone == "America/New_York" and req.weekdays is None
    assert req.recurrence.next_after(NOW) == datetime(2027, 3, 21, 11, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    "text", ['cron "30 9 * * 1-5" Europe/Athens', "cron 30 9 * * 1-5 Europe/Athens"]
)
def test_cron_quoted_or_as_five_words(text: str) -> None:
    req = parse(text)
    assert req.cron == "30 9 * * 1-5" and req.local_time is None
    assert req.timezone == "Europe/Athens"


def test_zone_names_are_matched_case_insensitively() -> None:
    assert parse("09:30 europe/athens").timezone == "Europe/Athens"


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("09:30 Mars/Olympus", ["'Mars/Olympus'", "unknown time zone"]),
        ("09:30 Europe/Atens", ["'Europe/Atens'", "Europe/Athens"]),
        ("25:00 Europe/Athens", ["'25:00'", "not a time of day"]),
        ("09:60", ["'09:60'", "not a time of day"]),
        ('09:30 ""', ["weekday set is empty"]),
        ("09:30 ,", ["weekday set is empty"]),
        ("09:30 mon-fir", ["'fir'", "not a day of the week"]),
        ('cron "0 9 30 2 *"', ["'0 9 30 2 *'", "never fires"]),
        ('cron "0 9 31 4,6,9,11 *"', ["never fires"]),
        ('cron "61 9 * * *"', ["minute", "'61'"]),
        ('cron "0 9 * *"', ["5 fields", "4"]),
        ("cron", ["missing after 'cron'"]),
        ("09:30 window 0m", ["window", "0m"]),
        ("09:30 window soon", ["'soon'", "not a duration"]),
        ("09:30 demo maybe", ["'maybe'", "auto, button or off"]),
        ("Europe/Athens", ["say when"]),
        ("09:30 10:30", ["one time per schedule"]),
        ('09:30 cron "0 9 * * *"', ["not both"]),
    ],
)
def test_bad_input_names_the_problem_and_gives_an_example_that_works(
    text: str, names: list[str]
) -> None:
    with pytest.raises(UserFacingError) as info:
        parse(text)
    message = str(info.value)
    for name in names:
        assert name in message, message
    example = re.search(r"Example that works: /quiz schedule set (.*)$", message)
    assert example is not None, message
    assert parse(example.group(1)).recurrence.next_after(NOW) is not None


@pytest.mark.parametrize(
    ("text", "delta"),
    [
        ("8h", timedelta(hours=8)),
        ("90m", timedelta(minutes=90)),
        ("1h30m", timedelta(minutes=90)),
        ("2d", timedelta(days=2)),
        ("+1d2h", timedelta(days=1, hours=2)),
        ("45s", timedelta(seconds=45)),
    ],
)
def test_durations(text: str, delta: timedelta) -> None:
    assert parse_duration(text) == delta


@pytest.mark.parametrize("text", ["", "h", "8x", "soon", "1.5h"])
def test_non_durations(text: str) -> None:
    assert parse_duration(text) is None


def test_errors_are_translated_for_a_greek_channel() -> None:
    with pytest.raises(UserFacingError) as info:
        parse_schedule_request(["25:00"], translator(Locale.EL), "UTC", NOW)
    assert "25:00" in str(info.value) and "/quiz schedule set" in str(info.value)
    assert "not a time of day" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("+99999999999999999999d", DURATION_LIMIT),
        ("9" * 5000 + "h", DURATION_LIMIT),
        ("999999999d999999999h", DURATION_LIMIT),
        ("36600d", DURATION_LIMIT),
        ("36599d23h", timedelta(days=36599, hours=23)),
        ("²h", None),
    ],
)
def test_durations_saturate_instead_of_overflowing(text: str, expected: timedelta | None) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3", 3),
        ("#3", 3),
        ("9223372036854775807", 2**63 - 1),
        ("9223372036854775808", None),
        ("0", None),
        ("-1", None),
        ("1" * 30, None),
        ("²", None),
    ],
)
def test_schedule_ids_fit_the_storage_key(text: str, expected: int | None) -> None:
    assert parse_schedule_id(text) == expected


def test_absurd_schedule_words_are_refused_within_200_mb() -> None:
    # Words as the command runner hands them over (its own splitting is not timed here).
    measured = measure(
        "from datetime import UTC, datetime\nfrom bot.domain import Locale\n"
        "from bot.errors import UserFacingError\nfrom bot.i18n import translator\n"
        "from bot.scheduling import parse_schedule_request\n",
        """
        out = []
        for words in [
            ["09:30", "UTC", "window", "99999999999999999999d"],
            ["09:30", "UTC", "window", "9" * 100_000 + "d"],
            ["cron", "*/100000000000000000000 * * * *", "UTC"],
            ["cron", "0," * 500_000 + "0 9 * * *", "UTC"],
            ["09:30", "Europe/" * 100_000],
        ]:
            try:
                parse_schedule_request(words, translator(Locale.EN), "UTC", datetime.now(UTC))
            except UserFacingError as exc:
                out.append(str(exc))
        return out
        """,
    )
    assert_bounded(measured)
    assert len(measured.out) == 5 and all(len(m) < 400 for m in measured.out), measured.out
