"""Numbers and sizes written the way each locale reads them.

English: ``1,234.5``; Greek: ``1.234,5`` (decimal comma, thousands dot), one format per
text. Sizes pick the largest binary unit that keeps the number at or above 1 and drop
trailing zeros: ``512 B``, ``700 KiB``, ``1.5 MiB``, ``40 GiB``; allocator figures use
`exact_bytes`, which never hides the 512-byte rounding.
"""

from __future__ import annotations

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30


def number(value: float, digits: int = 0, *, el: bool = False) -> str:
    """``number(1234.5, 1) == "1,234.5"``; Greek swaps the separators."""
    text = f"{value:,.{digits}f}"
    if digits and "." in text:
        text = text.rstrip("0").rstrip(".")
    return text.translate(str.maketrans(",.", ".,")) if el else text


def nbytes(size: float, *, el: bool = False, digits: int = 2) -> str:
    """A byte count in the largest unit that keeps it at or above 1, rounded to `digits`
    decimals: ``1.3 MiB``, ``260 MiB``, ``512 B``."""
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if abs(size) >= scale:
            return f"{number(size / scale, digits, el=el)} {unit}"
    return f"{number(size, 0, el=el)} B"


def exact_bytes(size: int, *, el: bool = False) -> str:
    """A byte count shown exactly (allocator figures): the largest unit that needs at most
    two decimals and under five digits (``3,074 MiB`` for 3 GiB + 2 MiB, ``1.5 KiB``),
    else rounded in the largest unit (``15.01 MiB``)."""
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if abs(size) >= scale and (size * 100) % scale == 0 and abs(size) / scale < 10_000:
            return f"{number(size / scale, 2, el=el)} {unit}"
    if abs(size) < 10_000:
        return f"{number(size, 0, el=el)} B"
    return nbytes(size, el=el)


def unit_for(size: float) -> tuple[str, int]:
    """The unit a plot axis should use for values up to `size`."""
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if size >= 2 * scale:
            return unit, scale
    return "B", 1
