"""Numbers and byte sizes as a reader of each locale writes them (pure; no matplotlib).

English: `15,728` and `608.07 MiB`; Greek: `15.728` and `608,07 MiB` (decimal comma,
thousands dot). Thousands are grouped from five digits on, so a 4-digit figure such as
`1024 MiB` reads the same in both. Sizes pick their unit: `512 B`, `1 KiB`, `1.5 KiB`,
`50 MiB`, `1.25 GiB` (never `0.0` for a small size). Allocator figures ask for
`format_bytes(n, exact=True)`, which never hides the 512-byte rounding: `3074 MiB` for
3 GiB + 2 MiB, not `3 GiB`.
"""

from __future__ import annotations

from bot.domain import Locale

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
_UNITS = ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB"))


def format_number(value: float, digits: int = 0, locale: Locale = Locale.EN) -> str:
    """`value` with `digits` decimals, grouped from 10,000 on, in the locale's separators."""
    text = f"{value:,.{digits}f}" if abs(value) >= 10_000 else f"{value:.{digits}f}"
    if locale is Locale.EL:
        # Swap the separators through a placeholder: "," -> ".", "." -> ",".
        text = text.replace(",", "\0").replace(".", ",").replace("\0", ".")
    return text


def _trimmed(value: float, locale: Locale) -> str:
    """Up to two decimals, trailing zeros dropped: 1 -> "1", 1.5 -> "1.5", 608.07."""
    rounded = round(value, 2)
    digits = 0 if rounded.is_integer() else (1 if round(rounded, 1) == rounded else 2)
    return format_number(rounded, digits, locale)


def _exact_unit(n: float) -> tuple[int, str] | None:
    """The largest unit in which `n` is a whole number of hundredths, under 10,000 of it
    (`3 GiB + 2 MiB` -> MiB); None when there is none (then bytes, or rounded)."""
    for unit, name in _UNITS:
        if n >= unit and (n * 100) % unit == 0 and n / unit < 10_000:
            return unit, name
    return None


def format_bytes(nbytes: float, locale: Locale = Locale.EN, *, exact: bool = False) -> str:
    """A size in the largest binary unit it reaches: `512 B`, `1 KiB`, `608.07 MiB`.
    `exact`: only in a unit that shows it exactly (`3074 MiB`, `1.5 KiB`, `1536 B`), else
    in bytes below 10,000, else rounded as without it."""
    sign = "−" if nbytes < 0 else ""
    n = abs(nbytes)
    if exact:
        found = _exact_unit(n)
        if found is not None:
            return f"{sign}{_trimmed(n / found[0], locale)} {found[1]}"
        if n < 10_000:
            return f"{sign}{format_number(n, 0, locale)} B"
    for unit, name in _UNITS:
        if n >= unit:
            return f"{sign}{_trimmed(n / unit, locale)} {name}"
    return f"{sign}{format_number(n, 0, locale)} B"


def format_mib(nbytes: float, digits: int = 0, locale: Locale = Locale.EN) -> str:
    """Always in MiB (for figures compared side by side): `52428800 -> "50 MiB"`."""
    return f"{format_number(nbytes / MiB, digits, locale)} MiB"


def format_gib(nbytes: float, digits: int = 2, locale: Locale = Locale.EN) -> str:
    return f"{format_number(nbytes / GiB, digits, locale)} GiB"


def format_percent(fraction: float, digits: int = 1, locale: Locale = Locale.EN) -> str:
    """`0.984 -> "98.4%"` (Greek `98,4%`)."""
    return f"{format_number(100 * fraction, digits, locale)}%"


def format_signed_mib(nbytes: float, locale: Locale = Locale.EN) -> str:
    """A change in MiB with its sign: `+0 MiB`, `−1024 MiB` (a typographic minus)."""
    text = format_mib(abs(nbytes), 0, locale)
    return ("−" if nbytes < 0 else "+") + text


def unit_for(nbytes: float) -> tuple[str, int]:
    """The unit a plot axis should use for values up to `nbytes`: (name, bytes per unit),
    the largest that keeps the top of the axis at 2 units or more."""
    for unit, name in _UNITS:
        if nbytes >= 2 * unit:
            return name, unit
    return "B", 1
