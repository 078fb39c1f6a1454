"""The reports read as their locale writes: one number format per text, Greek separators,
the glossary's words for reserved and allocated, retries."""

from __future__ import annotations

import re

import pytest

from bot.domain import Locale
from gpu_runner.demos import RunContext, default_registry

REGISTRY = default_registry()
IN_PROCESS = [d for d in REGISTRY.ids() if d != "activation-checkpointing"]


def prose(report: str) -> str:
    """The report without code (spans and blocks keep Python's and torch's own format) and
    without version numbers."""
    text = re.sub(r"```.*?```", " ", report, flags=re.DOTALL)
    text = re.sub(r"`[^`]*`", " ", text)
    return re.sub(r"(torch|CUDA) \d+(\.\d+)*\S*", " ", text)


def report(demo: str, locale: Locale, **params: object) -> str:
    ctx = RunContext(demo, locale, REGISTRY.check(demo, params), simulate=True)
    return REGISTRY[demo].run(ctx).report


@pytest.mark.parametrize("demo", IN_PROCESS)
def test_greek_reports_use_a_decimal_comma_and_a_thousands_dot(demo: str) -> None:
    text = prose(report(demo, Locale.EL))
    # A dot between digits only groups thousands ("15.728"), never decimals ("0.875").
    assert not re.findall(r"\d\.(?=\d)(?!\d{3}(?!\d))", text), text
    assert not re.findall(r"\d{2},\d{3}(?!\d)", text), text  # "15,728": English grouping
    english = prose(report(demo, Locale.EN))
    assert not re.findall(r"\d,(?=\d)(?!\d{3}(?!\d))", english), english


@pytest.mark.parametrize("demo", IN_PROCESS)
def test_greek_reports_use_no_latin_semicolon_as_a_separator(demo: str) -> None:
    # Greek readers take ";" for a question mark: "·" separates.
    text = prose(report(demo, Locale.EL))
    assert not re.findall(r";\s+[^\s·*]", text), text


@pytest.mark.parametrize("demo", IN_PROCESS)
def test_greek_reports_name_reserved_and_allocated_by_the_glossary(demo: str) -> None:
    text = prose(report(demo, Locale.EL))
    for english, greek in (("allocated", "κατανεμημέν"), ("reserved", "δεσμευμέν")):
        for before in re.findall(rf"(\S+) \({english}\)", text):
            assert before.lower().strip("*_(").startswith(greek), (english, before)
    assert not re.search(r"δεσμευμέν\S* \(allocated\)", text)


def test_greek_says_retries_with_the_glossary_word() -> None:
    text = report("oom-inactive-split", Locale.EL)
    assert "επαναπροσπάθειες 1" in text and "επαναλήψεις" not in text
    assert "επαναπροσπάθειες" in report("expandable-segments", Locale.EL)
