"""The reports read as their locale writes: one number format per text, Greek separators,
the glossary's words for reserved and allocated, retries."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest

from bot.domain import Locale
from tests.runner.demo_checks import LANGUAGE_CHECKS, NO_TORCH, run_demo


@functools.cache  # each check reads the same two reports: run each demo once a locale
def report(demo: str, locale: Locale, **params: object) -> str:
    return run_demo(demo, locale, **params).report


@pytest.mark.parametrize(
    "check", LANGUAGE_CHECKS, ids=["number-format", "greek-separators", "glossary"]
)
@pytest.mark.parametrize("demo", NO_TORCH)
def test_reports_read_as_their_locale_writes(demo: str, check: Callable[[str, str], None]) -> None:
    check(report(demo, Locale.EN), report(demo, Locale.EL))


def test_greek_says_retries_with_the_glossary_word() -> None:
    text = report("oom-inactive-split", Locale.EL)
    assert "επαναπροσπάθειες 1" in text and "επαναλήψεις" not in text
    assert "επαναπροσπάθειες" in report("expandable-segments", Locale.EL)
