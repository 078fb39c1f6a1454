"""The shipped bank's choices do not give the answer away (docs/content-guide.md).

The figures are computed from whatever the bank holds, so the limits hold as it grows.
"""

from __future__ import annotations

import pytest

from bot.bank import QuestionBank
from bot.domain import Locale, choice_letter
from questions import load_bank
from questions.lint import (
    JOKE_MIN_DIFFICULTY,
    LIMITED_POSITIONS,
    LONGEST_SHARE_MAX,
    POSITION_SHARE_MAX,
    POSITION_SHARE_MIN,
    joke_pattern,
    lint_bank,
)


@pytest.fixture(scope="module")
def bank() -> QuestionBank:
    return load_bank()


@pytest.mark.parametrize("locale", list(Locale))
def test_the_correct_choice_is_rarely_the_longest(bank: QuestionBank, locale: Locale) -> None:
    report = lint_bank(bank)
    assert report.longest_share(str(locale)) <= LONGEST_SHARE_MAX, report.longest


def test_every_answer_position_holds_a_fair_share(bank: QuestionBank) -> None:
    report = lint_bank(bank)
    shares = {
        choice_letter(i): report.position_share(choice_letter(i)) for i in range(LIMITED_POSITIONS)
    }
    assert all(POSITION_SHARE_MIN <= s <= POSITION_SHARE_MAX for s in shares.values()), shares


def test_no_joke_distractors_from_difficulty_2(bank: QuestionBank) -> None:
    jokes = [
        (q.id, str(locale), choice)
        for q in bank
        if q.difficulty >= JOKE_MIN_DIFFICULTY
        for locale, text in q.texts.items()
        for i, choice in enumerate(text.choices)
        if i != q.answer and joke_pattern(choice)
    ]
    assert jokes == []


def test_easy_questions_keep_at_most_one_playful_distractor(bank: QuestionBank) -> None:
    crowded = {
        q.id: n
        for q in bank
        for locale, text in q.texts.items()
        if (n := sum(1 for c in text.choices if joke_pattern(c))) > 1
    }
    assert crowded == {}


def test_the_lint_report_has_no_bank_wide_breach(bank: QuestionBank) -> None:
    assert lint_bank(bank).breaches() == []
