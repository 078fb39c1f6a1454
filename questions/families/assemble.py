"""From a `Draft` to a `GeneratedQuestion`: distractors, choice order, text, metadata.

Every distractor is one of the draft's named misconceptions: no scaled or filler values.
The candidates whose shown value differs from the answer's (and, for rounded sizes, lies
at least 2 % from it) and from each other are split into those below and those above the
answer; the answer's rank among the four values is drawn (uniformly, or by the family's
`rank_weights`; the nearest feasible rank when one side has too few), and the distractors
are drawn at random from each side, so that neither the rank nor a fixed set of
distractors gives the answer away (see `questions.families.guessers`). The rank, the draw
and the choice order come from a `random.Random` seeded by the family and scenario
number: a scenario always looks the same. The explanation is the draft's steps and then
one note per distractor, all of them.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace
from typing import Any, Final

from bot.bank import question_from_dict, question_to_dict
from bot.domain import Locale
from bot.i18n import Text
from questions.families.model import (
    Candidate,
    Draft,
    Family,
    GeneratedQuestion,
    NumericAnswer,
    Style,
)
from questions.families.sizes import (
    COUNT,
    UNIT_BYTES,
    common_unit,
    exact_in,
    in_unit,
    magnitude_unit,
    natural_unit,
    number,
    rounded,
)
from questions.schema import EXPLANATION_MAX

GENERATED_KEY: Final = "generated"
ANSWER: Final = "{answer}"  # a step may name the answer as the choices show it
CHOICES: Final = 4
SEPARATION: Final = 0.02  # a rounded distractor lies at least 2 % from the answer
SPACING: Final = 0.01  # and 1 % from every other distractor


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
        if self.style is Style.ROUNDED_SIZE:  # shown as at least the last decimal
            return bool(in_unit(value, self.unit) >= 10**-self.decimals)
        return value == int(value)

    def apart(self, a: float, b: float, gap: float) -> bool:
        """Rounded sizes must differ by more than the display could blur."""
        if self.style is not Style.ROUNDED_SIZE:
            return True
        return abs(a - b) >= gap * max(a, b)

    def key(self, value: float) -> str:
        """What must differ between two choices: the exact value, or the rounded text."""
        if self.style is Style.ROUNDED_SIZE:
            return self.show(value, Locale.EN)
        return str(int(value))

    def settle(self, values: list[float]) -> None:
        """Exact sizes: all four in one unit, the largest that shows every one exactly."""
        if self.style is Style.EXACT_SIZE:
            self.unit = common_unit([int(v) for v in values])

    def show(self, value: float, locale: Locale) -> str:
        if self.style is Style.COUNT:
            return number(value, 0, locale)
        if self.style is Style.EXACT_SIZE:
            return exact_in(int(value), self.unit, locale)
        return rounded(value, self.unit, self.decimals, locale)

    def number(self, value: float, unit: str) -> float:
        """The number behind a choice, in `unit`."""
        if unit == COUNT:
            return int(value)
        scaled = value / UNIT_BYTES[unit]
        return scaled if self.style is Style.EXACT_SIZE else round(scaled, 6)


def distractor_pool(draft: Draft, shower: _Shower) -> tuple[list[Candidate], list[Candidate]]:
    """The usable candidates below and above the answer (distinct, and apart when rounded)."""
    seen = {shower.key(draft.answer)}
    below: list[Candidate] = []
    above: list[Candidate] = []
    for candidate in draft.candidates:
        value = candidate.value
        if not shower.acceptable(value):
            continue
        shown = shower.key(value)
        if shown in seen or not shower.apart(value, draft.answer, SEPARATION):
            continue
        if not all(shower.apart(value, c.value, SPACING) for c in (*below, *above)):
            continue
        seen.add(shown)
        (below if value < draft.answer else above).append(candidate)
    return below, above


def with_compounds(draft: Draft) -> Draft:
    """The draft with two-error candidates added: a safety net for the rare scenario whose
    single misconceptions coincide (the family tests count how often it is needed)."""
    singles = list(draft.candidates)
    extra = []
    for i, first in enumerate(singles):
        for second in singles[i + 1 :]:
            value = first.value + second.value - draft.answer
            if value > 0:
                # a short name of each error where the family gives one, else its note
                why = (
                    Text("two errors: {a} and {b}.", a=first.label, b=second.label)
                    if first.label is not None and second.label is not None
                    else Text("two errors at once: {a} {b}", a=first.why, b=second.why)
                )
                extra.append(
                    Candidate(f"{first.misconception}-with-{second.misconception}", value, why)
                )
    # labelled pairs first: their notes are the short ones
    extra.sort(key=lambda c: "at once" in str(getattr(c.why, "msgid", "")))
    return replace(draft, candidates=(*singles, *extra))


def feasible_ranks(below: int, above: int) -> list[int]:
    """The ranks the answer can take with `below` and `above` candidates to draw from."""
    return [r for r in range(CHOICES) if below >= r and above >= CHOICES - 1 - r]


def pick_distractors(
    draft: Draft,
    shower: _Shower,
    rng: random.Random,
    weights: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0),
) -> list[Candidate]:
    """Three named misconceptions placing the answer at a drawn rank (by `weights`)."""
    below, above = distractor_pool(draft, shower)
    if len(below) + len(above) < CHOICES - 1:
        below, above = distractor_pool(with_compounds(draft), shower)
    ranks = feasible_ranks(len(below), len(above))
    if not ranks:
        raise AssertionError(
            f"only {len(below)} + {len(above)} usable distractors for {draft.inputs}"
        )
    wanted = rng.choices(range(CHOICES), weights=weights)[0]
    rank = min(ranks, key=lambda r: (abs(r - wanted), rng.random()))
    return rng.sample(below, rank) + rng.sample(above, CHOICES - 1 - rank)


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
    """The steps, then every misconception note, within the bank's limit.

    The families keep steps and notes short enough for all of them (the family tests
    check it in both locales); should a scenario ever overrun, middle steps go first,
    never the first step, the conclusion or a note.
    """
    kept = list(steps)
    while len(kept) > 2 and len(" ".join([*kept, *notes])) > EXPLANATION_MAX:
        del kept[-2]
    text = " ".join([*kept, *notes])
    if len(text) > EXPLANATION_MAX:  # a last safety net: cut at a sentence
        cut = text.rfind(". ", 0, EXPLANATION_MAX - 1)
        return text[: cut + 1] if cut > 0 else text[: EXPLANATION_MAX - 1] + "…"
    return text


def assemble(
    family: Family, draft: Draft, *, seed: int, index: int, scenario: int
) -> GeneratedQuestion:
    """The finished question `gen-<family>-<seed>-<index>` for one computed scenario."""
    if GENERATED_KEY in draft.inputs:
        raise ValueError(f"a draft's inputs must not use the key {GENERATED_KEY!r}")
    shower = _Shower(draft)
    rng = random.Random(f"{family.id}:{scenario}")
    distractors: list[Candidate | None] = list(
        pick_distractors(draft, shower, rng, family.rank_weights)
    )
    rng.shuffle(distractors)
    answer_at = rng.randrange(CHOICES)
    distractors.insert(answer_at, None)
    values = [draft.answer if c is None else c.value for c in distractors]
    shower.settle(values)

    texts: dict[str, dict[str, Any]] = {}
    for locale in Locale:
        notes = [
            Text("Not {value}: {why}", value=shower.show(c.value, locale), why=c.why).render(locale)
            for c in distractors
            if c is not None
        ]
        shown_answer = shower.show(draft.answer, locale)
        texts[locale.value] = {
            "prompt": draft.prompt.render(locale),
            "choices": [shower.show(v, locale) for v in values],
            "explanation": compose_explanation(
                [s.render(locale).replace(ANSWER, shown_answer) for s in draft.steps], notes
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
