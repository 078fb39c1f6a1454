"""Numbers and byte sizes as a reader of each locale writes them: the one formatter of every
package (the core's messages, the demos, the clinic, the simulator, generated questions).

English writes ``1,234.5``, Greek ``1.234,5`` (decimal comma, thousands dot). Digits are
grouped from ``group_from`` on: 1,000 by default, as both locales write; the demos pass
10,000 so that a four-digit allocator figure (``1024 MiB``) reads the same in both.

Sizes are binary (KiB, MiB, GiB) and come in three kinds:

- ``size(n, locale)``: the largest unit reached, up to two decimals, trailing zeros dropped
  (``512 B``, ``1.5 KiB``, ``608.07 MiB``): never ``0.0`` for a small size;
- ``size(n, locale, exact=True)``: the largest unit that shows every byte within two
  decimals (``3074 MiB`` for 3 GiB + 2 MiB, not ``3 GiB``), else bytes below 10,000, else
  rounded as above;
- ``size(n, locale, unit=MIB, digits=2)``: one given unit with fixed decimals, for figures
  compared side by side (``608.07 MiB``).

Negative sizes carry a typographic minus (``−20 MiB``); ``signed=True`` adds ``+`` to the
others (a change of free memory). `Number`, `Size` and `Percent` are the same formats as
values that render later, in the reader's locale: a `bot.i18n.Text` takes them as
placeholder values. Pure Python; the bot process and the runner's child both import it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from bot.domain import Locale

KiB: Final = 1 << 10
MiB: Final = 1 << 20
GiB: Final = 1 << 30
MINUS: Final = "−"  # U+2212, not a hyphen
_EXACT_BYTES_BELOW: Final = 10_000


@dataclass(frozen=True, slots=True)
class Unit:
    name: str
    size: int  # bytes per unit


B: Final = Unit("B", 1)
KIB: Final = Unit("KiB", KiB)
MIB: Final = Unit("MiB", MiB)
GIB: Final = Unit("GiB", GiB)
UNITS: Final = (GIB, MIB, KIB)  # largest first; bytes below them


def number(value: float, locale: Locale, digits: int = 0, *, group_from: float = 1_000) -> str:
    """`value` with `digits` decimals in the locale's separators, digits grouped from
    `group_from` on: ``1234.5 -> "1,234.5"`` (en), ``"1.234,5"`` (el)."""
    text = f"{value:,.{digits}f}" if abs(value) >= group_from else f"{value:.{digits}f}"
    if locale is Locale.EL:
        # Swap the separators through a placeholder: "," -> ".", "." -> ",".
        text = text.replace(",", "\0").replace(".", ",").replace("\0", ".")
    return text


def trimmed(value: float, locale: Locale, max_digits: int = 2, *, group_from: float = 1_000) -> str:
    """Up to `max_digits` decimals, trailing zeros dropped: 1 -> "1", 1.5 -> "1.5", 608.07."""
    rounded = round(value, max_digits)
    digits = next(d for d in range(max_digits + 1) if round(rounded, d) == rounded)
    return number(rounded, locale, digits, group_from=group_from)


def significant(
    value: float, locale: Locale, digits: int = 6, *, group_from: float = 10_000
) -> str:
    """At most `digits` significant digits, trailing zeros dropped, never an exponent: a
    typed answer or its target (``1536``, ``20.5``, ``0.125``, ``1,234,567``)."""
    if value == 0 or not math.isfinite(value):
        return number(value, locale, 0, group_from=group_from)
    magnitude = math.floor(math.log10(abs(value)))
    return trimmed(value, locale, max(0, digits - 1 - magnitude), group_from=group_from)


def percent(fraction: float, locale: Locale, digits: int = 1) -> str:
    """``0.984 -> "98.4%"`` (Greek ``98,4%``)."""
    return f"{number(100 * fraction, locale, digits)}%"


def exact_unit(nbytes: float) -> Unit | None:
    """The largest unit that shows `nbytes` as at least 1 with at most two decimals, exactly
    (``3 GiB + 2 MiB`` -> MiB, ``1536`` -> KiB); None when there is none."""
    n = abs(nbytes)
    for unit in UNITS:
        if n >= unit.size and (n * 100) % unit.size == 0:
            return unit
    return None


def magnitude_unit(nbytes: float) -> Unit:
    """The largest unit that `nbytes` reaches (at least 1 of it), else bytes."""
    n = abs(nbytes)
    return next((u for u in UNITS if n >= u.size), B)


def axis_unit(nbytes: float) -> Unit:
    """The unit for a plot axis whose values go up to `nbytes`: the largest that keeps the
    top of the axis at 2 units or more (``1 GiB`` -> MiB: no axis of ticks below 1)."""
    return next((u for u in UNITS if nbytes >= 2 * u.size), B)


def size(
    nbytes: float,
    locale: Locale,
    *,
    exact: bool = False,
    unit: Unit | None = None,
    digits: int | None = None,
    group_from: float = 1_000,
    signed: bool = False,
) -> str:
    """A byte count in a binary unit (see the module's docstring for the three kinds)."""
    sign = MINUS if nbytes < 0 else ("+" if signed else "")
    n = abs(nbytes)
    if unit is None and exact:
        unit = exact_unit(n)
        if unit is None and n < _EXACT_BYTES_BELOW:
            unit = B
    if unit is None:
        unit = magnitude_unit(n)
    value = n / unit.size
    if digits is None:
        text = trimmed(value, locale, group_from=group_from)
    else:
        text = number(value, locale, digits, group_from=group_from)
    return f"{sign}{text} {unit.name}"


# -- the same formats as values rendered later, in the reader's locale -------------------


@dataclass(frozen=True, slots=True)
class Number:
    """`number()` deferred: a `Text` placeholder value."""

    value: float
    digits: int = 0
    group_from: float = 1_000

    def render(self, locale: Locale) -> str:
        return number(self.value, locale, self.digits, group_from=self.group_from)


@dataclass(frozen=True, slots=True)
class Size:
    """`size()` deferred: a `Text` placeholder value."""

    nbytes: float
    exact: bool = False
    unit: Unit | None = None
    digits: int | None = None
    group_from: float = 1_000
    signed: bool = False

    def render(self, locale: Locale) -> str:
        return size(
            self.nbytes,
            locale,
            exact=self.exact,
            unit=self.unit,
            digits=self.digits,
            group_from=self.group_from,
            signed=self.signed,
        )


@dataclass(frozen=True, slots=True)
class Percent:
    """`percent()` deferred: a `Text` placeholder value."""

    fraction: float
    digits: int = 1

    def render(self, locale: Locale) -> str:
        return percent(self.fraction, locale, self.digits)
