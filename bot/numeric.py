"""Typed ("predict the number") answers: what a question's typed answer must hit, and how
a number typed in chat is read.

A generated question stores its target in ``inputs["generated"]``: ``unit`` and
``numeric: {value, tolerance}`` (docs/generated-questions.md); a bank question may carry
the same. A question without one takes button answers only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bot.domain import Locale, NumericTarget, Question

MAX_TYPED = 1e15  # above any memory figure a question asks about


class NumberProblem(StrEnum):
    """Why a typed answer is not taken (each has its own message, `bot.generated`)."""

    EMPTY = "empty"
    NOT_A_NUMBER = "not_a_number"
    NEGATIVE = "negative"
    TOO_LARGE = "too_large"
    UNIT = "unit"  # a unit other than the question's was typed
    AMBIGUOUS = "ambiguous"  # two readings: asked back, never guessed


@dataclass(frozen=True, slots=True)
class TypedNumber:
    """A typed answer read: its `value`, or the `problem` (None: the value is good)."""

    value: float | None
    problem: NumberProblem | None = None
    readings: tuple[float, ...] = ()  # AMBIGUOUS: the locale's reading, then the other
    unit: str = ""  # UNIT: what was typed after the number


# (thousands mark, decimal mark) as each locale prints numbers: 1,234.5 / 1.234,5
_MARKS = {Locale.EN: (",", "."), Locale.EL: (".", ",")}
_SIGN = re.compile(r"^([+\-\u2212]?)\s*")
_GAP = re.compile(r"(?<=[0-9])[\s\u00a0\u202f_'](?=[0-9])")  # 1 234 567, 1_000, 1'000 -> _
_EXPONENT = re.compile(r"[eE][+\-]?[0-9]{1,4}$")
_UNIT = re.compile(r"^(.*?[0-9.,])\s*([^\W\d_]+(?:/[^\W\d_]+)?|%)$")
_MANTISSA = re.compile(r"[0-9.,_]*[0-9][0-9.,_]*")
_GROUPS = re.compile(r"[1-9][0-9]{0,2}(?:,[0-9]{3})+")


def read_typed(text: str, locale: Locale = Locale.EN, unit: str = "") -> TypedNumber:
    """A number as people type it: the locale's own print (``1,234.5`` in English,
    ``1.234,5`` in Greek, digit groups also by spaces), the other locale's where it cannot
    mean anything else (``1.234,5``, ``1,5``, ``1.234.567`` in English), ``4.2e3``, the
    question's own `unit` after it. ``-0`` is 0. One mark followed by three digits that the
    locale prints otherwise (``1.500`` in English: a decimal would print as ``1.5``) is
    AMBIGUOUS."""
    rest = text.strip()
    if not rest:
        return TypedNumber(None, NumberProblem.EMPTY)
    if not _EXPONENT.search(rest) and (found := _UNIT.match(rest)) is not None:
        rest, typed_unit = found.group(1), found.group(2)
        if typed_unit.casefold() != unit.casefold():
            return TypedNumber(None, NumberProblem.UNIT, unit=typed_unit)
    sign = _SIGN.match(rest)
    negative = bool(sign and sign.group(1) in ("-", "\u2212"))
    rest = _GAP.sub("_", rest[sign.end() if sign else 0 :])
    exponent = _EXPONENT.search(rest)
    mantissa = rest[: exponent.start()] if exponent else rest
    if not _MANTISSA.fullmatch(mantissa):
        return TypedNumber(None, NumberProblem.NOT_A_NUMBER)
    readings = _readings(mantissa, locale)
    if not readings:
        return TypedNumber(None, NumberProblem.NOT_A_NUMBER)
    scale = exponent.group(0) if exponent else ""
    values = [float(f"{digits}{scale}") for digits in readings]
    if len(values) > 1:
        return TypedNumber(None, NumberProblem.AMBIGUOUS, readings=tuple(values))
    value = values[0]
    if negative and value != 0:
        return TypedNumber(None, NumberProblem.NEGATIVE)
    if not math.isfinite(value) or value > MAX_TYPED:
        return TypedNumber(None, NumberProblem.TOO_LARGE)
    return TypedNumber(value + 0.0)  # + 0.0: -0.0 becomes 0.0


def _readings(mantissa: str, locale: Locale) -> list[str]:
    """The mantissa as plain ``1234.5`` text: one reading, two (ambiguous), or none. A
    ``_`` stands for a space between digit groups, allowed before the decimal mark only."""
    marks = [c for c in mantissa if c in ".,"]
    if not marks:
        return [_plain(mantissa, "")] if "_" not in mantissa or _grouped(mantissa) else []
    decimal = marks[-1]
    whole, _, fraction = mantissa.rpartition(decimal)
    if "_" in fraction or (whole and not whole[-1].isdigit()):
        return []
    if len(set(marks)) == 2:  # 1,234.5 or 1.234,5: the last mark is the decimal one
        return [_plain(whole, fraction)] if _grouped(whole) else []
    if len(marks) > 1:  # 1,234,567: only thousands repeat
        return [_plain(mantissa, "")] if _grouped(mantissa) else []
    if "_" in whole and not _grouped(whole):
        return []
    as_decimal = _plain(whole, fraction) if fraction else _plain(whole, "")
    if len(fraction) != 3 or not _grouped(mantissa):
        return [as_decimal]
    thousands, _decimal = _MARKS[locale]
    if decimal == thousands:
        return [_plain(mantissa, "")]
    if fraction.endswith("0"):  # the locale prints this decimal shorter: 1.5, not 1.500
        return [as_decimal, _plain(mantissa, "")]
    return [as_decimal]


def _grouped(whole: str) -> bool:
    """``1,234,567``, ``1.234.567``, ``1 234 567``: groups of three after 1 to 3 digits."""
    return bool(_GROUPS.fullmatch(whole.replace(".", ",").replace("_", ",")))


def _plain(whole: str, fraction: str) -> str:
    digits = re.sub(r"[.,_]", "", whole) or "0"
    return f"{digits}.{fraction}" if fraction else digits


TYPE_NUMBER = "number"  # the button kind that opens the typed-answer form (`bot.generated`)


def numeric_target(question: Question) -> NumericTarget | None:
    generated = question.inputs.get("generated")
    if not isinstance(generated, Mapping):
        return None
    numeric = generated.get("numeric")
    if not isinstance(numeric, Mapping):
        return None
    try:
        value, tolerance = float(numeric["value"]), float(numeric["tolerance"])
    except (KeyError, TypeError, ValueError):
        return None
    return NumericTarget(value, tolerance, str(generated.get("unit", "")))


def matching_choice(question: Question, value: float, target: NumericTarget) -> int:
    """The choice whose number the typed value hits (within the tolerance), else -1."""
    values = _choice_values(question.inputs)
    for i, v in enumerate(values):
        if abs(v - value) <= target.tolerance + 1e-6:
            return i
    return question.answer if target.accepts(value) else -1


def _choice_values(inputs: Mapping[str, Any]) -> list[float]:
    generated = inputs.get("generated")
    if not isinstance(generated, Mapping):
        return []
    raw = generated.get("choice_values")
    try:
        return [float(v) for v in raw] if isinstance(raw, list) else []
    except (TypeError, ValueError):
        return []


__all__ = [
    "MAX_TYPED",
    "NumberProblem",
    "TypedNumber",
    "matching_choice",
    "numeric_target",
    "read_typed",
]
