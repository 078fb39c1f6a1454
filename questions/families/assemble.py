"""From a `Draft` to a `GeneratedQuestion`: distractors, choice order, text, metadata.

Distractors are the draft's candidates in order of preference, skipping any whose shown
value equals the answer's or an earlier pick's (a misconception can coincide with the
truth for some scenarios); only if fewer than three remain do scaled values stand in.
The correct position and the distractors' order come from a `random.Random` seeded by the
family and scenario number, so a scenario always looks the same.
"""

from __future__ import annotations

import math
import random
from typing import Any, Final

from bot.bank import question_from_dict, question_to_dict
from bot.domain import Locale
from questions.families.model import (
    Candidate,
    Draft,
    Family,
    GeneratedQuestion,
    NumericAnswer,
    Style,
    Text,
)
from questions.families.units import (
    COUNT,
    UNIT_BYTES,
    exact_size,
    format_number,
    in_unit,
    magnitude_unit,
    natural_unit,
    rounded_size,
)
from questions.schema import EXPLANATION_MAX

GENERATED_KEY: Final = "generated"
ANSWER: Final = "{answer}"  # a step may name the answer as the choices show it
CHOICES: Final = 4
_NOT = Text("Not {value}: {why}", "Όχι {value}: {why}")
_FALLBACK_SIZE = (
    (2.0, "factor-of-two", Text("that is twice the right figure.", "είναι το διπλάσιο.")),
    (0.5, "factor-of-two", Text("that is half the right figure.", "είναι το μισό.")),
    (4.0, "factor-of-four", Text("that is four times too much.", "είναι το τετραπλάσιο.")),
    (3.0, "factor-of-three", Text("that is three times too much.", "είναι το τριπλάσιο.")),
)
_FALLBACK_COUNT = (1, 2, -1, 3, 4)
_MISCOUNT = Text("that miscounts the steps above.", "λάθος μέτρημα των βημάτων.")


class _Shower:
    """Formats the draft's values: one style, one unit and one precision per question."""

    def __init__(self, draft: Draft) -> None:
        self.style = draft.style
        if draft.style is Style.COUNT:
            self.unit = COUNT
        elif draft.style is Style.EXACT_SIZE:
            self.unit = natural_unit(int(draft.answer))
        else:
            self.unit = magnitude_unit(draft.answer)
        self.decimals = 0
        if draft.style is Style.ROUNDED_SIZE:
            self.decimals = 2 if in_unit(draft.answer, self.unit) < 100 else 1

    def acceptable(self, value: float) -> bool:
        if not math.isfinite(value) or value < 0:
            return False
        if self.style is Style.ROUNDED_SIZE:
            return True
        return value == int(value)

    def show(self, value: float, locale: Locale) -> str:
        if self.style is Style.COUNT:
            return format_number(value, 0, locale)
        if self.style is Style.EXACT_SIZE:
            return exact_size(int(value), locale)
        return rounded_size(value, self.unit, self.decimals, locale)

    def number(self, value: float, unit: str) -> float:
        """The number behind a choice, in `unit`."""
        if unit == COUNT:
            return int(value)
        scaled = value / UNIT_BYTES[unit]
        return scaled if self.style is Style.EXACT_SIZE else round(scaled, 6)


def _fallbacks(draft: Draft) -> list[Candidate]:
    if draft.style is Style.COUNT:
        return [Candidate("miscount", draft.answer + delta, _MISCOUNT) for delta in _FALLBACK_COUNT]
    out = []
    for factor, name, why in _FALLBACK_SIZE:
        value = draft.answer * factor
        if draft.style is Style.EXACT_SIZE:
            value = max(512, int(value) // 512 * 512)
        out.append(Candidate(name, value, why))
    return out


def pick_distractors(draft: Draft, shower: _Shower) -> list[Candidate]:
    """Three candidates whose shown values differ from the answer's and from each other."""
    seen = {shower.show(draft.answer, Locale.EN)}
    picked: list[Candidate] = []
    for candidate in (*draft.candidates, *_fallbacks(draft)):
        if len(picked) == CHOICES - 1:
            break
        if not shower.acceptable(candidate.value):
            continue
        shown = shower.show(candidate.value, Locale.EN)
        if shown in seen:
            continue
        seen.add(shown)
        picked.append(candidate)
    if len(picked) < CHOICES - 1:
        raise AssertionError(f"only {len(picked)} distinct distractors for {draft.inputs}")
    return picked


def numeric_unit(shower: _Shower, values: list[float], answer_at: int) -> str | None:
    """The unit of a typed answer: the answer's own, or a smaller one when a distractor
    lies within 1 unit of it (the tolerance); None when even bytes cannot tell them apart."""
    if shower.unit == COUNT:
        return COUNT
    units = list(UNIT_BYTES)
    for unit in reversed(units[: units.index(shower.unit) + 1]):
        numbers = [v / UNIT_BYTES[unit] for v in values]
        if all(abs(n - numbers[answer_at]) > 1 for i, n in enumerate(numbers) if i != answer_at):
            return unit
    return None


def compose_explanation(steps: list[str], notes: list[str]) -> str:
    """The steps, then as many misconception notes as fit in the bank's limit."""
    text = " ".join(steps)
    if len(text) > EXPLANATION_MAX:  # a safety net; the family tests keep steps shorter
        cut = text.rfind(". ", 0, EXPLANATION_MAX - 1)
        return text[: cut + 1] if cut > 0 else text[: EXPLANATION_MAX - 1] + "…"
    for note in notes:
        if len(text) + 1 + len(note) <= EXPLANATION_MAX:
            text = f"{text} {note}"
    return text


def assemble(
    family: Family, draft: Draft, *, seed: int, index: int, scenario: int
) -> GeneratedQuestion:
    """The finished question `gen-<family>-<seed>-<index>` for one computed scenario."""
    if GENERATED_KEY in draft.inputs:
        raise ValueError(f"a draft's inputs must not use the key {GENERATED_KEY!r}")
    shower = _Shower(draft)
    distractors: list[Candidate | None] = list(pick_distractors(draft, shower))
    rng = random.Random(f"{family.id}:{scenario}")
    rng.shuffle(distractors)
    answer_at = rng.randrange(CHOICES)
    distractors.insert(answer_at, None)
    values = [draft.answer if c is None else c.value for c in distractors]

    texts: dict[str, dict[str, Any]] = {}
    for locale in Locale:
        notes = [
            _NOT.get(locale).format(value=shower.show(c.value, locale), why=c.why.get(locale))
            for c in distractors
            if c is not None
        ]
        texts[locale.value] = {
            "prompt": draft.prompt.get(locale),
            "choices": [shower.show(v, locale) for v in values],
            "explanation": compose_explanation(
                [
                    s.get(locale).replace(ANSWER, shower.show(draft.answer, locale))
                    for s in draft.steps
                ],
                notes,
            ),
        }

    typed_unit = numeric_unit(shower, values, answer_at)
    unit = typed_unit or shower.unit
    numbers = tuple(shower.number(v, unit) for v in values)
    numeric = None
    if typed_unit is not None:
        numeric = NumericAnswer(numbers[answer_at], 0 if unit == COUNT else 1, unit)
    misconceptions = tuple(None if c is None else c.misconception for c in distractors)
    meta: dict[str, Any] = {
        "family": family.id,
        "seed": seed,
        "index": index,
        "scenario": scenario,
        "unit": unit,
        "choice_values": list(numbers),
        "numeric": None
        if numeric is None
        else {"value": numeric.value, "tolerance": numeric.tolerance},
        "misconceptions": list(misconceptions),
    }
    data: dict[str, Any] = {
        "id": f"gen-{family.id}-{seed}-{index}",
        "topic": draft.topic,
        "difficulty": draft.difficulty,
        "answer": answer_at,
        "demo": draft.demo,
        "references": list(draft.references),
        "inputs": {**draft.inputs, GENERATED_KEY: meta},
        **texts,
    }
    return GeneratedQuestion(
        question=question_from_dict(data),
        family=family.id,
        seed=seed,
        index=index,
        scenario=scenario,
        inputs=draft.inputs,
        choice_values=numbers,
        unit=unit,
        numeric=numeric,
        misconceptions=misconceptions,
    )


def generated_to_dict(generated: GeneratedQuestion) -> dict[str, Any]:
    """`questions list --format json`'s shape plus family, seed, index, choice_values, unit,
    numeric and misconceptions (`inputs` keeps the canonical form plus ``generated``)."""
    data = question_to_dict(generated.question)
    numeric = generated.numeric
    data.update(
        family=generated.family,
        seed=generated.seed,
        index=generated.index,
        choice_values=list(generated.choice_values),
        unit=generated.unit,
        numeric=None
        if numeric is None
        else {"value": numeric.value, "tolerance": numeric.tolerance},
        misconceptions=list(generated.misconceptions),
    )
    return data
