"""Each form field checks itself: the submit form's letter follows the choices typed
before it, the report's reason is one of the four, a typed answer is a number."""

from __future__ import annotations

import pytest

from bot.domain import Locale, NumericTarget
from bot.flags import REASON, flag_form
from bot.generated import FIELD, number_form
from bot.submit import ANSWER, CHOICES, PROMPT, submit_form


def field(form: object, name: str):  # type: ignore[no-untyped-def]
    return next(f for f in form.fields if f.name == name)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("letter", "problem"),
    [
        ("Z", "'Z' is not one of your choices: type its letter, A to D."),
        ("E", "'E' is not one of your choices: type its letter, A to D."),
        ("d", None),
        ("B.", None),
    ],
)
def test_the_letter_follows_the_number_of_choices_typed(letter: str, problem: str | None) -> None:
    answer = field(submit_form(Locale.EN), ANSWER)
    assert "A–E" not in answer.label
    assert answer.problem({CHOICES: "a\nb\nc\nd", ANSWER: letter}) == problem


def test_each_submit_field_is_checked_on_its_own() -> None:
    form = submit_form(Locale.EN)
    assert field(form, PROMPT).problem({PROMPT: "  "}) == "Write the question."
    assert field(form, PROMPT).problem({PROMPT: "Why?"}) is None
    assert "you wrote 1" in field(form, CHOICES).problem({CHOICES: "only one"})
    values = {PROMPT: "Why?", CHOICES: "a | b", ANSWER: "C"}
    assert set(form.problems(values)) == {ANSWER, "explanation", "details"}


def test_the_report_reason_and_the_typed_number_check_themselves() -> None:
    reason = field(flag_form(7, Locale.EN), REASON)
    assert reason.problem({REASON: "2"}) is None
    assert "'nope' is not a reason" in reason.problem({REASON: "nope"})
    number = field(number_form(7, NumericTarget(42.0, 1.0, "MiB"), Locale.EN), FIELD)
    assert number.problem({FIELD: "42"}) is None
    assert "'-1' is negative" in number.problem({FIELD: "-1"})
