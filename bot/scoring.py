"""Scoring rules, in one place.

- A correct answer to a channel question scores 10 points.
- A streak is the number of consecutive *scheduled* questions in a channel a member
  answered correctly; a wrong or missing answer to a scheduled question resets it.
- A correct answer adds a streak bonus of min(streak - 1, 5) (0 for a streak of 1).
  On-demand (`ask`) questions score the same, with the bonus of the streak the member
  holds, and neither extend nor break it.
- Practice questions never score.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.domain import PostKind

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
