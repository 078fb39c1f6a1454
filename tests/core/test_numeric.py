"""Typed numbers read the way each locale prints them (English ``1,234.5``, Greek
``1.234,5``), the other locale's unambiguous forms too; an ambiguous one is asked back, and
every refusal says why."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.domain import Locale
from bot.numeric import MAX_TYPED, NumberProblem, TypedNumber, read_typed

MARKS = {Locale.EN: (",", "."), Locale.EL: (".", ",")}  # (thousands, decimal)


def printed(value: Decimal, locale: Locale, group: str | None = None) -> str:
    """`value` as the locale prints it: digit groups of three, the locale's decimal mark,
    no trailing zeros (``group``: another group separator, e.g. a thin space)."""
    thousands, decimal = MARKS[locale]
    whole, _, fraction = f"{value:,f}".partition(".")
    fraction = fraction.rstrip("0")
    whole = whole.replace(",", group if group is not None else thousands)
    return whole + (decimal + fraction if fraction else "")


values = st.one_of(
    st.integers(0, 10**12).map(Decimal),
    st.decimals(0, 10**9, places=3, allow_nan=False, allow_infinity=False),
    st.decimals(0, 1, places=6, allow_nan=False, allow_infinity=False),
)


@given(values, st.sampled_from(list(Locale)), st.sampled_from([None, "\u202f", " ", "\u00a0"]))
def test_a_number_printed_the_way_the_locale_prints_it_reads_back_as_itself(
    value: Decimal, locale: Locale, group: str | None
) -> None:
    text = printed(value, locale, group)
    assert read_typed(text, locale) == TypedNumber(float(value)), text


@given(values, st.sampled_from(list(Locale)))
def test_the_other_locales_print_reads_back_unless_it_is_ambiguous(
    value: Decimal, locale: Locale
) -> None:
    other = Locale.EL if locale is Locale.EN else Locale.EN
    text = printed(value, other)
    read = read_typed(text, locale)
    marks = [c for c in text if c in ".,"]
    one_group_of_three = len(marks) == 1 and len(text.split(marks[0])[1]) == 3
    if not one_group_of_three:
        assert read == TypedNumber(float(value)), text


@pytest.mark.parametrize(
    ("text", "locale", "value"),
    [
        ("118,784", Locale.EN, 118784),  # how the English prompt prints numbers
        ("121,472,672", Locale.EN, 121472672),
        ("118.784", Locale.EN, 118.784),
        ("118,784", Locale.EL, 118.784),
        ("121.472.672", Locale.EL, 121472672),
        ("1.234,5", Locale.EN, 1234.5),
        ("1,234.5", Locale.EL, 1234.5),
        ("1,5", Locale.EN, 1.5),
        ("0,125", Locale.EN, 0.125),
        ("1.234.567", Locale.EN, 1234567),
        ("1 234,5", Locale.EN, 1234.5),
        ("4.2e3", Locale.EN, 4200),
        ("4,2e3", Locale.EL, 4200),
        ("  42 ", Locale.EN, 42),
        (".5", Locale.EN, 0.5),
        ("42.", Locale.EN, 42),
        ("+7", Locale.EN, 7),
        ("80 MiB", Locale.EN, 80),
        ("80mib", Locale.EL, 80),
    ],
)
def test_typed_numbers(text: str, locale: Locale, value: float) -> None:
    assert read_typed(text, locale, "MiB") == TypedNumber(float(value))


@pytest.mark.parametrize("text", ["-0", "-0.0", "-0,000", "−0"])
def test_minus_zero_is_zero(text: str) -> None:
    # Zero has no sign: "-0" is read as 0 (and echoed as 0), not refused as negative.
    read = read_typed(text, Locale.EN)
    assert read == TypedNumber(0.0) and str(read.value) == "0.0"


@pytest.mark.parametrize(
    ("text", "locale", "readings"),
    [
        ("1.500", Locale.EN, (1.5, 1500.0)),  # English never prints 1.5 as "1.500"
        ("2.000", Locale.EN, (2.0, 2000.0)),
        ("1,500", Locale.EL, (1.5, 1500.0)),
    ],
)
def test_a_number_the_locale_would_not_print_that_way_is_asked_back(
    text: str, locale: Locale, readings: tuple[float, float]
) -> None:
    assert read_typed(text, locale) == TypedNumber(None, NumberProblem.AMBIGUOUS, readings=readings)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", NumberProblem.EMPTY),
        ("   ", NumberProblem.EMPTY),
        ("lots", NumberProblem.NOT_A_NUMBER),
        ("nan", NumberProblem.NOT_A_NUMBER),
        ("inf", NumberProblem.NOT_A_NUMBER),
        ("1,2,3", NumberProblem.NOT_A_NUMBER),
        ("1,23,456", NumberProblem.NOT_A_NUMBER),
        ("1.2.3,4.5", NumberProblem.NOT_A_NUMBER),
        ("12 34", NumberProblem.NOT_A_NUMBER),
        ("4 2 MiB", NumberProblem.NOT_A_NUMBER),
        ("0x10", NumberProblem.NOT_A_NUMBER),
        ("-3", NumberProblem.NEGATIVE),
        ("−3", NumberProblem.NEGATIVE),
        ("-1e99", NumberProblem.NEGATIVE),
        ("1e16", NumberProblem.TOO_LARGE),
        ("1e400", NumberProblem.TOO_LARGE),
        ("9" * 44, NumberProblem.TOO_LARGE),
        ("80 GB", NumberProblem.UNIT),
        ("80GiB", NumberProblem.UNIT),
        ("118784 bytes", NumberProblem.UNIT),
    ],
)
def test_each_refusal_names_its_reason(text: str, problem: NumberProblem) -> None:
    read = read_typed(text, Locale.EN, "MiB")
    assert read.value is None and read.problem is problem, read


def test_a_unit_refusal_names_the_unit_typed() -> None:
    assert read_typed("80 GB", Locale.EN, "MiB").unit == "GB"


def test_the_limit_is_above_any_memory_figure() -> None:
    assert read_typed(f"{MAX_TYPED:.0f}", Locale.EN) == TypedNumber(MAX_TYPED)
