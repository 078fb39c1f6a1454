"""One number and byte formatter for every package: each locale's separators, sizes that
never read as zero, exact allocator figures, deferred formats for `Text` placeholders."""

from __future__ import annotations

import pytest

from bot.domain import Locale
from bot.formats import (
    GIB,
    KIB,
    MIB,
    B,
    GiB,
    KiB,
    MiB,
    Number,
    Percent,
    Size,
    axis_unit,
    exact_unit,
    magnitude_unit,
    number,
    percent,
    significant,
    size,
    trimmed,
)
from bot.i18n import Text


def test_greek_numbers_use_a_decimal_comma_and_a_thousands_dot() -> None:
    assert number(1234.5, Locale.EN, 1) == "1,234.5"
    assert number(1234.5, Locale.EL, 1) == "1.234,5"
    assert number(2_097_152.5, Locale.EL, 1) == "2.097.152,5"
    assert number(0.875, Locale.EL, 3) == "0,875"
    assert number(999, Locale.EN) == "999"


def test_grouping_can_start_at_five_digits_so_1024_reads_the_same_in_both() -> None:
    assert number(1024, Locale.EL, group_from=10_000) == "1024"
    assert number(1024, Locale.EN, group_from=10_000) == "1024"
    assert number(15_728, Locale.EL, group_from=10_000) == "15.728"
    assert number(1024, Locale.EL) == "1.024"


def test_trimmed_keeps_at_most_the_decimals_that_say_something() -> None:
    assert trimmed(1.0, Locale.EN) == "1"
    assert trimmed(1.5, Locale.EL) == "1,5"
    assert trimmed(608.0712, Locale.EN) == "608.07"
    assert trimmed(2.004, Locale.EN) == "2"


def test_percent_in_each_locale() -> None:
    assert percent(0.984, Locale.EN) == "98.4%"
    assert percent(0.984, Locale.EL) == "98,4%"
    assert percent(0.5, Locale.EL, 0) == "50%"


@pytest.mark.parametrize(
    ("nbytes", "en", "el"),
    [
        (0, "0 B", "0 B"),
        (512, "512 B", "512 B"),
        (1023, "1,023 B", "1.023 B"),
        (KiB, "1 KiB", "1 KiB"),
        (1536, "1.5 KiB", "1,5 KiB"),
        (MiB - 1, "1,024 KiB", "1.024 KiB"),
        (50 * MiB, "50 MiB", "50 MiB"),
        (round(608.07 * MiB), "608.07 MiB", "608,07 MiB"),
        (GiB, "1 GiB", "1 GiB"),
        (int(1.25 * GiB), "1.25 GiB", "1,25 GiB"),
    ],
)
def test_sizes_take_the_largest_unit_and_never_read_as_zero(nbytes: int, en: str, el: str) -> None:
    assert size(nbytes, Locale.EN) == en
    assert size(nbytes, Locale.EL) == el


@pytest.mark.parametrize(
    ("nbytes", "rounded", "exact"),
    [
        (3 * GiB + 2 * MiB, "3 GiB", "3074 MiB"),  # allocator figures hide no rounding
        (10 * GiB + 2 * MiB, "10 GiB", "10,242 MiB"),  # nor above 10,000 of a unit
        (1536, "1.5 KiB", "1.5 KiB"),
        (2 * MiB + 512, "2 MiB", "2048.5 KiB"),
        (1000, "1000 B", "1000 B"),
        (15 * MiB + 12_345, "15.01 MiB", "15.01 MiB"),  # no exact unit: rounded, as said
        (-(20 * MiB), "−20 MiB", "−20 MiB"),
    ],
)
def test_exact_sizes_show_every_byte_the_unit_can(nbytes: int, rounded: str, exact: str) -> None:
    five = 10_000
    assert size(nbytes, Locale.EN, group_from=five) == rounded
    assert size(nbytes, Locale.EN, exact=True, group_from=five) == exact
    greek = exact.replace(",", "\0").replace(".", ",").replace("\0", ".")
    assert size(nbytes, Locale.EL, exact=True, group_from=five) == greek


def test_a_fixed_unit_with_fixed_decimals_for_figures_side_by_side() -> None:
    assert size(608.07 * MiB, Locale.EN, unit=MIB, digits=2) == "608.07 MiB"
    assert size(608.07 * MiB, Locale.EL, unit=MIB, digits=2) == "608,07 MiB"
    assert size(16.6 * GiB, Locale.EL, unit=GIB, digits=1) == "16,6 GiB"
    assert size(1536 * MiB, Locale.EN, unit=MIB, digits=0) == "1,536 MiB"
    assert size(1536, Locale.EN, unit=B) == "1,536 B"


def test_a_change_of_free_memory_carries_its_sign() -> None:
    assert size(-1024 * MiB, Locale.EN, unit=MIB, digits=0, signed=True) == "−1,024 MiB"
    assert size(0, Locale.EN, unit=MIB, digits=0, signed=True) == "+0 MiB"


def test_units_exact_by_magnitude_and_for_an_axis() -> None:
    assert exact_unit(3 * GiB + 2 * MiB) is MIB
    assert exact_unit(1536) is KIB
    assert exact_unit(1537) is None
    assert magnitude_unit(1.5 * GiB) is GIB and magnitude_unit(100) is B
    assert axis_unit(3 * GiB) is GIB
    assert axis_unit(GiB) is MIB  # 1024 MiB, not 1 GiB with every tick below 1
    assert axis_unit(1500) is B


def test_deferred_formats_render_in_the_locale_of_the_text_they_fill() -> None:
    line = Text("peak {peak}, {share} of {n} blocks", peak=Size(1536, exact=True))
    line = line.fill(share=Percent(0.125), n=Number(12_345))
    assert line.render(Locale.EN) == "peak 1.5 KiB, 12.5% of 12,345 blocks"
    assert Size(1536, exact=True).render(Locale.EL) == "1,5 KiB"
    assert Number(12_345.5, 1).render(Locale.EL) == "12.345,5"
    assert Percent(0.125).render(Locale.EL) == "12,5%"


@pytest.mark.parametrize(
    ("value", "en", "el"),
    [
        (1536.0, "1536", "1536"),
        (20.5, "20.5", "20,5"),
        (0.125, "0.125", "0,125"),
        (1 / 3, "0.333333", "0,333333"),
        (1_234_567.0, "1,234,567", "1.234.567"),  # never "1.23457e+06"
        (0.0, "0", "0"),
    ],
)
def test_a_typed_answer_shows_its_significant_digits_without_an_exponent(
    value: float, en: str, el: str
) -> None:
    assert significant(value, Locale.EN) == en
    assert significant(value, Locale.EL) == el
