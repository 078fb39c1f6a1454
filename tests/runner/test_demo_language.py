"""The reports read as their locale writes: one number format per text, Greek separators,
the glossary's words for reserved and allocated, retries, no English left in Greek."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from bot.domain import Locale
from tests.runner.demo_checks import LANGUAGE_CHECKS, NO_TORCH, rendered, texts


def report(demo: str, locale: Locale) -> str:
    return rendered(demo, locale).report


@pytest.mark.parametrize(
    "check", LANGUAGE_CHECKS, ids=["number-format", "greek-separators", "glossary", "greek"]
)
@pytest.mark.parametrize("demo", NO_TORCH)
def test_reports_read_as_their_locale_writes(demo: str, check: Callable[[str, str], None]) -> None:
    check(report(demo, Locale.EN), report(demo, Locale.EL))


def test_greek_says_retries_with_the_glossary_word() -> None:
    text = report("oom-inactive-split", Locale.EL)
    assert "επαναπροσπάθειες 1" in text and "επαναλήψεις" not in text
    assert "επαναπροσπάθειες" in report("expandable-segments", Locale.EL)


@pytest.mark.parametrize("locale", list(Locale))
@pytest.mark.parametrize("demo", NO_TORCH)
def test_demo_text_says_what_a_step_is_not_its_internal_number(demo: str, locale: Locale) -> None:
    out = rendered(demo, locale)
    drawn = [t.get_text() for t in texts(out.figure)]
    for text in [out.report, *drawn]:
        assert not re.search(r"\b[QS]\d+\b", text), text  # "Q3's request", "του Q1"
