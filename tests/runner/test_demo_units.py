"""Numbers and sizes in each locale's format, and no unreadable small sizes."""

from __future__ import annotations

import pytest

from bot.domain import Locale
from gpu_runner.demos._units import (
    GiB,
    KiB,
    MiB,
    format_bytes,
    format_mib,
    format_number,
    format_percent,
    format_signed_mib,
    unit_for,
)


@pytest.mark.parametrize(
    ("nbytes", "en", "el"),
    [
        (0, "0 B", "0 B"),
        (512, "512 B", "512 B"),
        (1023, "1023 B", "1023 B"),
        (KiB, "1 KiB", "1 KiB"),
        (1536, "1.5 KiB", "1,5 KiB"),
        (MiB - 1, "1024 KiB", "1024 KiB"),
        (50 * MiB, "50 MiB", "50 MiB"),
        (round(608.07 * MiB), "608.07 MiB", "608,07 MiB"),
        (GiB, "1 GiB", "1 GiB"),
        (int(1.25 * GiB), "1.25 GiB", "1,25 GiB"),
    ],
)
def test_sizes_take_the_largest_unit_and_never_read_as_zero(nbytes: int, en: str, el: str) -> None:
    assert format_bytes(nbytes, Locale.EN) == en
    assert format_bytes(nbytes, Locale.EL) == el


def test_greek_numbers_use_a_decimal_comma_and_a_thousands_dot() -> None:
    assert format_number(15_728, 0, Locale.EN) == "15,728"
    assert format_number(15_728, 0, Locale.EL) == "15.728"
    assert format_number(2_097_152.5, 1, Locale.EL) == "2.097.152,5"
    assert format_number(0.875, 3, Locale.EL) == "0,875"
    # Four digits stay ungrouped in both, so "1024 MiB" reads the same everywhere.
    assert format_number(1024, 0, Locale.EL) == format_number(1024, 0, Locale.EN) == "1024"
    assert format_percent(0.984, 1, Locale.EL) == "98,4%"
    assert format_mib(608.07 * MiB, 2, Locale.EL) == "608,07 MiB"


def test_a_change_of_free_memory_carries_its_sign() -> None:
    assert format_signed_mib(-1024 * MiB) == "−1024 MiB"
    assert format_signed_mib(0) == "+0 MiB"
    assert format_bytes(-2 * MiB) == "−2 MiB"


@pytest.mark.parametrize(
    ("nbytes", "rounded", "exact"),
    [
        (3 * GiB + 2 * MiB, "3 GiB", "3074 MiB"),  # allocator figures hide no rounding
        (1536, "1.5 KiB", "1.5 KiB"),
        (2 * MiB + 512, "2 MiB", "2048.5 KiB"),
        (1000, "1000 B", "1000 B"),
        (15 * MiB + 12_345, "15.01 MiB", "15.01 MiB"),  # no exact unit: rounded, as said
        (-(20 * MiB), "−20 MiB", "−20 MiB"),
    ],
)
def test_exact_sizes_show_every_byte_the_unit_can(nbytes: int, rounded: str, exact: str) -> None:
    assert format_bytes(nbytes) == rounded
    assert format_bytes(nbytes, exact=True) == exact
    assert format_bytes(nbytes, Locale.EL, exact=True) == exact.replace(".", ",")


def test_an_axis_unit_keeps_the_top_at_two_units_or_more() -> None:
    assert unit_for(3 * GiB) == ("GiB", GiB)
    assert unit_for(GiB) == ("MiB", MiB)  # 1024 MiB, not 1 GiB with every tick below 1
    assert unit_for(1500) == ("B", 1)
