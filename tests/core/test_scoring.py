"""The scoring rules, table-driven."""

from __future__ import annotations

import pytest

from bot.domain import PostKind
from bot.scoring import Scored, score_answer

S, A, P = PostKind.SCHEDULED, PostKind.ASK, PostKind.PRACTICE


@pytest.mark.parametrize(
    ("kind", "correct", "streak_before", "expected"),
    [
        (S, True, 0, Scored(10, 1)),  # first correct: no bonus
        (S, True, 1, Scored(11, 2)),
        (S, True, 4, Scored(14, 5)),
        (S, True, 5, Scored(15, 6)),  # bonus caps at 5
        (S, True, 20, Scored(15, 21)),
        (S, False, 7, Scored(0, 0)),  # a wrong answer breaks the streak
        (A, True, 0, Scored(10, 0)),  # ask scores the same, streak untouched
        (A, True, 3, Scored(12, 3)),
        (A, False, 3, Scored(0, 3)),  # and a wrong ask answer does not break it
        (P, True, 3, Scored(0, 3)),  # practice never scores
    ],
)
def test_score_answer(kind: PostKind, correct: bool, streak_before: int, expected: Scored) -> None:
    assert score_answer(kind, correct, streak_before) == expected
