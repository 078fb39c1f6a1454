"""Board windows are local dates in the channel's time zone: day, ISO week, month."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.domain import (
    BoardPeriod,
    BoardScope,
    BoardWindow,
    ChannelRef,
    Platform,
    PostKind,
    UserRef,
)
from bot.quiz import QuizService
from bot.scoring import board_period
from tests.boards.conftest import play, set_timezone
from tests.conftest import user

ATHENS = ZoneInfo("Europe/Athens")
W, M, D = BoardWindow.WEEK, BoardWindow.MONTH, BoardWindow.DAY
ALICE, BOB = user("alice"), user("bob")


def athens(*args: int) -> datetime:
    return datetime(*args, tzinfo=ATHENS)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("at", "window", "first", "last"),
    [
        # Sunday 23:59 in Athens is still the week that began on Monday the 4th...
        (athens(2027, 1, 10, 23, 59), W, date(2027, 1, 4), date(2027, 1, 10)),
        # ...and one minute later the next one, although it is Sunday 22:00 in UTC.
        (athens(2027, 1, 11, 0, 0), W, date(2027, 1, 11), date(2027, 1, 17)),
        # The week of the spring DST change (Sunday 28 March 2027, 03:00 -> 04:00).
        (athens(2027, 3, 22, 0, 30), W, date(2027, 3, 22), date(2027, 3, 28)),
        (athens(2027, 3, 28, 23, 30), W, date(2027, 3, 22), date(2027, 3, 28)),
        (athens(2027, 3, 29, 0, 30), W, date(2027, 3, 29), date(2027, 4, 4)),
        # The autumn change (Sunday 31 October 2027, 04:00 -> 03:00).
        (athens(2027, 10, 31, 23, 59), W, date(2027, 10, 25), date(2027, 10, 31)),
        (athens(2027, 11, 1, 0, 1), W, date(2027, 11, 1), date(2027, 11, 7)),
        # A week across a year end is the ISO week (Monday to Sunday).
        (athens(2027, 1, 1, 12, 0), W, date(2026, 12, 28), date(2027, 1, 3)),
        (athens(2028, 2, 29, 23, 59), M, date(2028, 2, 1), date(2028, 2, 29)),
        (athens(2027, 12, 31, 23, 59), M, date(2027, 12, 1), date(2027, 12, 31)),
        (athens(2027, 3, 1, 0, 0), M, date(2027, 3, 1), date(2027, 3, 31)),
        (athens(2027, 3, 1, 0, 30), D, date(2027, 3, 1), date(2027, 3, 1)),
    ],
)
def test_board_period_is_the_local_day_week_or_month(
    at: datetime, window: BoardWindow, first: date, last: date
) -> None:
    assert board_period(window, at.astimezone(UTC), "Europe/Athens") == BoardPeriod(
        window, first, last
    )


def test_the_same_instant_is_a_different_week_in_another_zone() -> None:
    monday_athens = athens(2027, 1, 11, 0, 30).astimezone(UTC)  # Sunday 22:30 UTC
    assert board_period(W, monday_athens, "UTC").first == date(2027, 1, 4)
    assert board_period(W, monday_athens, "Europe/Athens").first == date(2027, 1, 11)
    assert board_period(BoardWindow.ALL, monday_athens, "UTC") == BoardPeriod(BoardWindow.ALL)


async def test_answer_at_2359_sunday_in_athens_counts_for_that_week_even_if_closed_monday(
    service: QuizService, channel: ChannelRef
) -> None:
    await set_timezone(service, channel, "Europe/Athens")
    post = await play(service, channel, {ALICE: True}, at=athens(2027, 1, 10, 23, 59), close=False)
    service.clock.set(athens(2027, 1, 11, 0, 5))  # type: ignore[attr-defined]
    await service.close(post.id)

    this_week = await service.leaderboard(channel, ALICE, W)
    assert (this_week.first_day, this_week.rows) == (date(2027, 1, 11), ())
    last_week = await service.store.scores.leaderboard(
        channel, ALICE, period=BoardPeriod(W, date(2027, 1, 4), date(2027, 1, 10))
    )
    assert [(r.user, r.points) for r in last_week.rows] == [(ALICE, 10)]
    sunday = await service.store.scores.leaderboard(
        channel, None, period=BoardPeriod(D, date(2027, 1, 10), date(2027, 1, 10))
    )
    assert [r.user for r in sunday.rows] == [ALICE]


async def test_a_utc_channel_and_an_athens_channel_split_the_same_instant_differently(
    service: QuizService, channel: ChannelRef
) -> None:
    utc_channel = ChannelRef(Platform.SLACK, "T1", "C-utc")
    await set_timezone(service, channel, "Europe/Athens")
    monday_athens = athens(2027, 1, 11, 0, 30)  # Sunday 22:30 in UTC
    await play(service, channel, {ALICE: True}, at=monday_athens)
    await play(service, utc_channel, {ALICE: True}, at=monday_athens)

    service.clock.set(athens(2027, 1, 11, 12, 0))  # type: ignore[attr-defined]
    assert [r.points for r in (await service.leaderboard(channel, None, W)).rows] == [10]
    assert (await service.leaderboard(utc_channel, None, W)).rows == ()  # UTC: last week's
    previous = BoardPeriod(W, date(2027, 1, 4), date(2027, 1, 10))
    assert (await service.store.scores.leaderboard(channel, None, period=previous)).rows == ()
    utc_previous = await service.store.scores.leaderboard(utc_channel, None, period=previous)
    assert [r.points for r in utc_previous.rows] == [10]


async def test_dst_week_keeps_both_ends_and_excludes_the_next_monday(
    service: QuizService, channel: ChannelRef
) -> None:
    await set_timezone(service, channel, "Europe/Athens")
    await play(service, channel, {ALICE: True, BOB: True}, at=athens(2027, 3, 22, 0, 30))
    await play(service, channel, {ALICE: True}, at=athens(2027, 3, 28, 23, 30))
    await play(service, channel, {BOB: True}, at=athens(2027, 3, 29, 0, 30))

    dst_week = BoardPeriod(W, date(2027, 3, 22), date(2027, 3, 28))
    for scope in BoardScope:
        board = await service.store.scores.leaderboard(channel, None, scope=scope, period=dst_week)
        assert [(r.user, r.answered) for r in board.rows] == [(ALICE, 2), (BOB, 1)]
    next_week = await service.leaderboard(channel, None, W)
    assert next_week.first_day == date(2027, 3, 29)
    assert [(r.user, r.points) for r in next_week.rows] == [(BOB, 10)]


async def test_month_and_day_boards_follow_the_local_calendar(
    service: QuizService, channel: ChannelRef
) -> None:
    await set_timezone(service, channel, "Europe/Athens")
    await play(service, channel, {ALICE: True}, at=athens(2027, 1, 31, 23, 50))
    await play(service, channel, {BOB: True}, at=athens(2027, 2, 1, 0, 10))
    service.clock.set(athens(2027, 2, 1, 9, 0))  # type: ignore[attr-defined]

    month = await service.leaderboard(channel, None, M)
    assert (month.first_day, month.last_day) == (date(2027, 2, 1), date(2027, 2, 28))
    assert [r.user for r in month.rows] == [BOB]
    assert [r.user for r in (await service.leaderboard(channel, None, D)).rows] == [BOB]
    all_time = await service.leaderboard(channel, None)
    assert {r.user for r in all_time.rows} == {ALICE, BOB}
    service.clock.set(athens(2027, 2, 2, 0, 0))  # type: ignore[attr-defined]
    assert (await service.leaderboard(channel, None, D)).rows == ()


async def test_workspace_board_sums_the_channels_of_the_workspace_only(
    service: QuizService, channel: ChannelRef
) -> None:
    other = ChannelRef(Platform.SLACK, "T1", "C2")
    elsewhere = ChannelRef(Platform.SLACK, "T2", "C1")
    carol = UserRef(Platform.SLACK, "T2", "UCAROL", "carol")
    await play(service, channel, {ALICE: True, BOB: True})
    await play(service, other, {ALICE: True}, kind=PostKind.ASK)
    await play(service, elsewhere, {carol: True})
    service.clock.advance(timedelta(minutes=1))  # type: ignore[attr-defined]

    for window in BoardWindow:
        board = await service.leaderboard(channel, BOB, window, BoardScope.WORKSPACE)
        assert [(r.user, r.points, r.answered) for r in board.rows] == [
            (ALICE, 20, 2),
            (BOB, 10, 1),
        ], window
        assert board.players == 2 and board.caller is not None and board.caller.rank == 2
    channel_only = await service.leaderboard(other, None)
    assert [(r.user, r.points) for r in channel_only.rows] == [(ALICE, 10)]
    t2 = await service.leaderboard(elsewhere, None, BoardWindow.WEEK, BoardScope.WORKSPACE)
    assert [r.user for r in t2.rows] == [carol]
