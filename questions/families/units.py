"""Numbers and sizes as a question shows them, in English and Greek.

English writes ``1,536`` and ``2.5``; Greek writes ``1.536`` and ``2,5`` (the bank's style).
A trace question shows every size exactly: in the largest unit where it needs at most two
decimals. A formula question shows all four values in one unit with a fixed number of
decimals.
"""

from __future__ import annotations

from typing import Final

from bot.domain import Locale

KIB: Final = 1024
MIB: Final = 1024 * KIB
GIB: Final = 1024 * MIB

# The units a question's `unit` may name, with their size in bytes ("count" has none).
UNIT_BYTES: Final = {"bytes": 1, "KiB": KIB, "MiB": MIB, "GiB": GIB}
COUNT: Final = "count"
UNITS: Final = (*UNIT_BYTES, COUNT)


def format_number(value: float, decimals: int, locale: Locale) -> str:
    """``1234.5`` as ``1,234.5`` (en) or ``1.234,5`` (el)."""
    text = f"{value:,.{decimals}f}"
    if locale is Locale.EL:
        text = text.replace(",", "\0").replace(".", ",").replace("\0", ".")
    return text


def exact_decimals(value: float) -> int | None:
    """How many decimals (0-2) show `value` exactly; None when two are not enough."""
    for decimals in range(3):
        scaled = value * 10**decimals
        if scaled == int(scaled):
            return decimals
    return None


def natural_unit(nbytes: int) -> str:
    """The largest unit that shows `nbytes` exactly, as at least 1, with <= 2 decimals."""
    for unit in ("GiB", "MiB", "KiB"):
        value = nbytes / UNIT_BYTES[unit]
        if value >= 1 and exact_decimals(value) is not None:
            return unit
    return "bytes"


def in_unit(nbytes: float, unit: str) -> float:
    return nbytes / UNIT_BYTES[unit]


def exact_size(nbytes: int, locale: Locale) -> str:
    """A size shown exactly: ``20 MiB``, ``2.5 MiB``, ``1,536 bytes`` (el ``2,5 MiB``)."""
    if nbytes == 1:
        return "1 byte"
    unit = natural_unit(nbytes)
    value = in_unit(nbytes, unit)
    return f"{format_number(value, exact_decimals(value) or 0, locale)} {unit}"


def magnitude_unit(nbytes: float) -> str:
    """The unit a formula answer is shown in: the largest one giving at least 1 of it."""
    for unit in ("GiB", "MiB", "KiB"):
        if nbytes >= UNIT_BYTES[unit]:
            return unit
    return "bytes"


def rounded_size(nbytes: float, unit: str, decimals: int, locale: Locale) -> str:
    """A size in a given unit with fixed decimals: ``16.6 GiB`` (el ``16,6 GiB``)."""
    return f"{format_number(in_unit(nbytes, unit), decimals, locale)} {unit}"
