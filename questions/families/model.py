"""The values a family works with: a `Draft` (one computed scenario) and a `Family`.

A family's `build(variant, params)` returns a `Draft`: the canonical `inputs`, the prompt,
the steps of the computation, the answer as a number (bytes or a count), and the
candidate distractors, each computed from a named misconception. `assemble` turns a draft
into a `GeneratedQuestion` (choices placed, explanation written, validated shape).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import Any, Final

from bot.domain import NumericTarget, Question
from bot.i18n import Localized
from questions.families.space import Space


class Style(StrEnum):
    """How the four values are shown."""

    EXACT_SIZE = "exact-size"  # bytes, each in the largest unit that shows it exactly
    ROUNDED_SIZE = "rounded-size"  # bytes, all in one unit with fixed decimals
    COUNT = "count"  # a whole number


@dataclass(frozen=True, slots=True)
class Candidate:
    """A tempting wrong value and the misconception it comes from.

    `why` is one short clause saying what the value computes and why that is wrong, e.g.
    "the request itself; blocks are rounded up to 512 B."; the question shows it as
    "Not 1,000 bytes: the request itself; ...".
    """

    misconception: str
    value: float
    why: Localized
    # a short name of the error ("keys only"), for a two-error candidate's note, and the
    # factor of the formula it gets wrong (two errors combine only on different factors)
    label: Localized | None = None
    factor: str = ""


@dataclass(frozen=True, slots=True)
class Draft:
    topic: str
    difficulty: int
    inputs: dict[str, Any]  # canonical and replayable (JSON values only)
    prompt: Localized
    steps: tuple[Localized, ...]  # the computation, in order; the explanation starts with them
    answer: float
    style: Style
    candidates: tuple[Candidate, ...]  # every named misconception that applies
    references: tuple[str, ...]
    demo: str | None = None


def make_draft(
    topic: str,
    difficulty: int,
    inputs: dict[str, Any],
    prompt: Localized,
    steps: Iterable[Localized],
    answer: float,
    candidates: Iterable[Candidate],
    references: tuple[str, ...],
    style: Style = Style.ROUNDED_SIZE,
    demo: str | None = None,
) -> Draft:
    """A draft from its parts; by default a formula question's (a size rounded as its
    choices show it, no demo)."""
    return Draft(
        topic,
        difficulty,
        inputs,
        prompt,
        tuple(steps),
        answer,
        style,
        tuple(candidates),
        references,
        demo,
    )


TRACE_KIND: Final = "allocator-trace"


@dataclass(frozen=True, slots=True)
class Family:
    """A generator of questions of one kind; `build` is a pure function of its inputs."""

    id: str
    topic: str
    kind: str  # "allocator-trace" (answered by the simulator) or "formula"
    difficulty: tuple[int, int]  # lowest and highest difficulty it produces
    description: str
    space: Space
    build: Callable[[str, dict[str, Any]], Draft] = field(repr=False, compare=False)
    # How often the answer is meant to be the smallest, second, third, largest value.
    # Uniform unless some scenarios cannot place the answer at an end (too few
    # misconceptions on one side): then the ends are drawn a little more often elsewhere,
    # so that over the family every rank still comes out at about 25 % (measured by
    # tests/questions/families/test_form.py and bench/generate.py).
    rank_weights: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)

    def summary(self) -> dict[str, Any]:
        """What `questions families --format json` prints for this family."""
        return {
            "id": self.id,
            "topic": self.topic,
            "kind": self.kind,
            "difficulty": list(self.difficulty),
            "scenarios": self.space.size,
            "description": self.description,
        }


# Families of the two kinds: trace questions (answered by the simulator), formula
# questions (answered by a formula from the inputs).
trace_family = partial(Family, kind=TRACE_KIND)
formula_family = partial(Family, kind="formula")


# A typed ("predict the number") answer: the core's own value, which the bot reads back
# from a stored question (`bot.numeric.numeric_target`).
NumericAnswer = NumericTarget


@dataclass(frozen=True, slots=True)
class GeneratedQuestion:
    """One generated question: the bank `Question` plus what is behind its choices.

    `question.inputs` holds the canonical `inputs` plus a ``generated`` mapping with the
    same family data (family, seed, index, scenario, unit, choice_values, numeric,
    misconceptions), so a stored question keeps them (see docs/generated-questions.md).
    """

    question: Question
    family: str
    seed: int
    index: int
    scenario: int
    inputs: Mapping[str, Any]
    choice_values: tuple[float, ...]
    unit: str
    numeric: NumericAnswer | None
    misconceptions: tuple[str | None, ...]  # per choice; None for the correct one

    @property
    def id(self) -> str:
        return self.question.id
