"""Scoring and board rules, in one place.

- A correct answer to a channel question scores 10 points.
- A streak is the number of consecutive *scheduled* questions in a channel a member
  answered correctly; a wrong or missing answer to a scheduled question resets it.
- A correct answer adds a streak bonus of min(streak - 1, 5) (0 for a streak of 1).
  On-demand (`ask`) questions score the same, with the bonus of the streak the member
  holds, and neither extend nor break it.
- Practice questions never score.
- Boards rank by points; equal points share a rank (1, 2, 2, 4) and are listed by more
  correct answers, then by who reached the score first.
- Board windows are local dates in the channel's time zone: the day, the ISO week
  (Monday to Sunday), the month; an answer counts for the local date it was given on.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from bot.domain import BoardPeriod, BoardWindow, PostKind

BASE_POINTS = 10
MAX_STREAK_BONUS = 5


@dataclass(frozen=True, slots=True)
class Scored:
    points: int
    streak: int  # the member's streak after this post


def streak_bonus(streak: int) -> int:
    return max(0, min(streak - 1, MAX_STREAK_BONUS))


def score_answer(kind: PostKind, correct: bool, streak_before: int) -> Scored:
    """Points for one answer and the member's streak afterwards."""
    if kind is PostKind.PRACTICE:
        return Scored(0, streak_before)
    if kind is PostKind.SCHEDULED:
        streak = streak_before + 1 if correct else 0
        return Scored(BASE_POINTS + streak_bonus(streak) if correct else 0, streak)
    return Scored(BASE_POINTS + streak_bonus(streak_before) if correct else 0, streak_before)


def local_day(at: datetime, timezone: str) -> date:
    """The date `at` falls on in `timezone` (an IANA name such as ``Europe/Athens``)."""
    return at.astimezone(ZoneInfo(timezone)).date()


def period_start(window: BoardWindow, day: date) -> date:
    """The first local date of the `window` period that contains `day`."""
    if window is BoardWindow.WEEK:
        return day - timedelta(days=day.weekday())
    if window is BoardWindow.MONTH:
        return day.replace(day=1)
    if window is BoardWindow.DAY:
        return day
    raise ValueError("the all-time window has no start date")


def board_period(window: BoardWindow, now: datetime, timezone: str) -> BoardPeriod:
    """The local dates of the current `window` in `timezone`."""
    if window is BoardWindow.ALL:
        return BoardPeriod(window)
    first = period_start(window, local_day(now, timezone))
    if window is BoardWindow.DAY:
        last = first
    elif window is BoardWindow.WEEK:
        last = first + timedelta(days=6)
    else:
        last = (first + timedelta(days=31)).replace(day=1) - timedelta(days=1)
    return BoardPeriod(window, first, last)
