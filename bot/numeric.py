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
from typing import Any

from bot.domain import NumericTarget, Question

MAX_TYPED = 1e15  # above any memory figure a question asks about
_NUMBER = re.compile(r"[+-]?(\d+([.,]\d*)?|[.,]\d+)([eE][+-]?\d+)?")

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


def parse_typed(text: str) -> float | None:
    """A number as people type it: ``42``, ``42.5``, ``42,5`` (a decimal comma), ``4.2e3``,
    with spaces or thin spaces between digit groups. None when it is not one, or is
    negative, not finite, or absurdly large."""
    clean = re.sub(r"[\s\u202f\u00a0_']", "", text)[:64]
    if not _NUMBER.fullmatch(clean):
        return None
    try:
        value = float(clean.replace(",", "."))
    except ValueError:
        return None
    if not math.isfinite(value) or value < 0 or value > MAX_TYPED:
        return None
    return value


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


def format_number(value: float, locale_comma: bool = False) -> str:
    text = f"{value:,.6g}" if abs(value) >= 1e6 else f"{value:.6g}"
    text = text.replace(",", "\u202f")
    return text.replace(".", ",") if locale_comma else text


__all__ = ["MAX_TYPED", "format_number", "matching_choice", "numeric_target", "parse_typed"]
