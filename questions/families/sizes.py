"""Sizes and numbers as a question shows them, through the project's formatter
(`bot.formats`): English ``1,536`` and ``2.5``, Greek ``1.536`` and ``2,5``.

A trace question shows its four choices exactly, all in one unit: the largest in which
each needs at most two decimals (`common_unit`, `exact_in`); a size in its text is shown
exactly in its own largest such unit (`ExactSize`). A formula question shows its four
values in one unit with fixed decimals (`rounded`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from bot import formats
from bot.domain import Locale

KIB: Final = formats.KiB
MIB: Final = formats.MiB
GIB: Final = formats.GiB

# The units a question's `unit` may name, with their size in bytes ("count" has none).
UNIT_BYTES: Final = {"bytes": 1, "KiB": KIB, "MiB": MIB, "GiB": GIB}
COUNT: Final = "count"
UNITS: Final = (*UNIT_BYTES, COUNT)
_FORMAT_UNITS: Final = {
    "bytes": formats.B,
    "KiB": formats.KIB,
    "MiB": formats.MIB,
    "GiB": formats.GIB,
}


def exact_decimals(value: float) -> int | None:
    """How many decimals (0-2) show `value` exactly; None when two are not enough."""
    for decimals in range(3):
        scaled = value * 10**decimals
        if scaled == int(scaled):
            return decimals
    return None


def in_unit(nbytes: float, unit: str) -> float:
    return nbytes / UNIT_BYTES[unit]


def natural_unit(nbytes: int) -> str:
    """The largest unit that shows `nbytes` exactly, as at least 1, with <= 2 decimals."""
    found = formats.exact_unit(nbytes)
    return "bytes" if found is None else found.name


def common_unit(sizes: list[int]) -> str:
    """The largest unit that shows every size exactly with at most two decimals."""
    for unit in ("GiB", "MiB", "KiB"):
        if all(exact_decimals(n / UNIT_BYTES[unit]) is not None for n in sizes):
            return unit
    return "bytes"


def exact_in(nbytes: int, unit: str, locale: Locale) -> str:
    """`nbytes` in `unit`, exactly: ``2,048 KiB``, ``0.5 KiB``, ``1,047,041 B``."""
    digits = exact_decimals(in_unit(nbytes, unit)) or 0
    return formats.size(nbytes, locale, unit=_FORMAT_UNITS[unit], digits=digits)


def magnitude_unit(nbytes: float) -> str:
    """The unit a formula answer is shown in: the largest one giving at least 1 of it."""
    unit = formats.magnitude_unit(nbytes)
    return "bytes" if unit is formats.B else unit.name


def rounded(nbytes: float, unit: str, decimals: int, locale: Locale) -> str:
    """A size in a given unit with fixed decimals: ``16.60 GiB`` (el ``16,60 GiB``)."""
    return formats.size(nbytes, locale, unit=_FORMAT_UNITS[unit], digits=decimals)


def number(value: float, decimals: int, locale: Locale) -> str:
    return formats.number(value, locale, decimals)


@dataclass(frozen=True, slots=True)
class ExactSize:
    """A byte count in a question's text, exact: its largest exact unit, else bytes."""

    nbytes: int

    def render(self, locale: Locale) -> str:
        return exact_in(self.nbytes, natural_unit(self.nbytes), locale)
