"""Test-wise players: rules that pick a choice from the form of a question alone.

Each guesser looks at the four values (and their shown text, and the prompt) and returns
how likely it is to pick each choice: the choices its rule selects share the bet equally,
and where the rule selects none it guesses at random. Its *hit rate* over many questions
is the mean weight it puts on the correct choice; chance is 25 %. A family whose form
gives its answer away lets some guesser beat chance by far (the limit the tests hold:
`HIT_MAX`). `rank_shares` measures where the answer falls among the four values.

Pure functions of a `GeneratedQuestion`; used by the tests and by `bench/generate.py`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from bot.domain import Locale
from questions.families.model import GeneratedQuestion

HIT_MAX: Final = 0.35  # no rule may find the answer in more than 35 % of a family
RANK_SHARE: Final = (0.20, 0.30)  # each rank of the answer among the values: 25 % +- 5
CHOICES: Final = 4
_REL: Final = 1e-3  # two values are "the same" within 0.1 %
_RATIOS: Final = (2, 3, 4, 5, 8, 10, 16, 32, 64)
_NUMBER = re.compile(r"\d[\d,.]*")


@dataclass(frozen=True, slots=True)
class Form:
    """What a guesser sees: the numbers behind the choices, their text, the prompt."""

    values: tuple[float, ...]  # in the question's unit (bytes-like sizes or counts)
    bytes_: tuple[float, ...]  # the same in bytes (counts unchanged)
    shown: tuple[str, ...]  # the English choices
    shown_el: tuple[str, ...]
    prompt: str
    prompt_el: str
    answer: int


_UNIT_BYTES: Final = {
    "bytes": 1,
    "byte": 1,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
    "TiB": 1024**4,
}


def _shown_bytes(text: str) -> float:
    """The bytes a shown choice states ("12.50 GiB" -> 12.5 * 2**30), as a player reads it."""
    number = _NUMBER.search(text)
    value = float(number.group().replace(",", "")) if number else 0.0
    return value * _UNIT_BYTES.get(_unit(text), 1)


def form_of(generated: GeneratedQuestion) -> Form:
    q = generated.question
    en, el = q.text(Locale.EN), q.text(Locale.EL)
    return Form(
        values=tuple(float(v) for v in generated.choice_values),
        bytes_=tuple(_shown_bytes(c) for c in en.choices),
        shown=tuple(en.choices),
        shown_el=tuple(el.choices),
        prompt=en.prompt,
        prompt_el=el.prompt,
        answer=q.answer,
    )


Bet = tuple[float, ...]
Guesser = Callable[[Form], Bet]


def _among(picked: Iterable[int]) -> Bet:
    chosen = sorted(set(picked))
    if not chosen:
        return (1 / CHOICES,) * CHOICES
    return tuple(1 / len(chosen) if i in chosen else 0.0 for i in range(CHOICES))


def _best(scores: Sequence[float], *, largest: bool = True) -> Bet:
    """The choices with the top (or bottom) score; a tie shares the bet."""
    target = max(scores) if largest else min(scores)
    if all(math.isclose(s, target) for s in scores):
        return _among([])
    return _among(i for i, s in enumerate(scores) if math.isclose(s, target))


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_REL, abs_tol=1e-12)


def by_rank(rank: int) -> Guesser:
    def guess(f: Form) -> Bet:
        order = sorted(range(CHOICES), key=lambda i: f.values[i])
        return _among([order[rank]])

    return guess


def _partners(f: Form, ratios: Iterable[float]) -> list[int]:
    ratios = list(ratios)
    return [
        sum(
            any(_same(f.values[j], f.values[i] * r) for r in ratios)
            for j in range(CHOICES)
            if j != i
        )
        for i in range(CHOICES)
    ]


def has_partner(ratios: Sequence[float]) -> Guesser:
    """The choices whose value times one of `ratios` is also offered."""

    def guess(f: Form) -> Bet:
        return _among(i for i, n in enumerate(_partners(f, ratios)) if n)

    return guess


def ratio_hub(f: Form) -> Bet:
    """The choice related to most others by a simple ratio (2, 3, 4, 5, 8, 10, ... or 1/x)."""
    ratios = [*_RATIOS, *(1 / r for r in _RATIOS)]
    return _best([float(n) for n in _partners(f, ratios)])


def geometric_centre(f: Form) -> Bet:
    logs = [math.log(max(v, 1e-9)) for v in f.values]
    centre = sum(logs) / CHOICES
    return _best([abs(x - centre) for x in logs], largest=False)


def arithmetic_centre(f: Form) -> Bet:
    centre = sum(f.values) / CHOICES
    return _best([abs(v - centre) for v in f.values], largest=False)


def _trailing_zero_bits(x: float) -> float:
    n = round(x)
    if n == 0:
        return 64.0
    return float((n & -n).bit_length() - 1)


def roundest_bytes(f: Form) -> Bet:
    """The value with the most trailing zero bits (a whole 2 MiB, 20 MiB... looks "right").

    Only where the choices state exact bytes; a rounded "12.50 GiB" shows no bits."""
    if any(b != int(b) or "." in s for b, s in zip(f.bytes_, f.shown, strict=True)):
        return _among([])
    return _best([_trailing_zero_bits(b) for b in f.bytes_])


def _digits(text: str) -> str:
    match = _NUMBER.search(text)
    return re.sub(r"\D", "", match.group()) if match else ""


def _significant(text: str) -> float:
    digits = _digits(text).strip("0")
    return float(len(digits))


def roundest_text(f: Form) -> Bet:
    """The shown number with the fewest significant digits."""
    return _best([_significant(s) for s in f.shown], largest=False)


def most_precise_text(f: Form) -> Bet:
    return _best([_significant(s) for s in f.shown])


def _unit(text: str) -> str:
    return text.split()[-1] if " " in text else ""


def odd_unit_out(f: Form) -> Bet:
    """The one choice shown in a unit none of the others uses."""
    units = [_unit(s) for s in f.shown]
    return _among(i for i, u in enumerate(units) if units.count(u) == 1 and len(set(units)) == 2)


def majority_unit(f: Form) -> Bet:
    units = [_unit(s) for s in f.shown]
    top = max(units.count(u) for u in units)
    if top in (1, CHOICES):
        return _among([])
    return _among(i for i, u in enumerate(units) if units.count(u) == top)


def longest(shown: Callable[[Form], Sequence[str]]) -> Guesser:
    def guess(f: Form) -> Bet:
        return _best([float(len(s)) for s in shown(f)])

    return guess


def shortest(shown: Callable[[Form], Sequence[str]]) -> Guesser:
    def guess(f: Form) -> Bet:
        return _best([float(len(s)) for s in shown(f)], largest=False)

    return guess


def _in_prompt(f: Form) -> list[bool]:
    return [bool(_digits(s)) and s.split()[0] in f.prompt for s in f.shown]


def in_prompt(f: Form) -> Bet:
    """The choice whose number already appears in the prompt."""
    return _among(i for i, hit in enumerate(_in_prompt(f)) if hit)


def not_in_prompt(f: Form) -> Bet:
    """Eliminate the choices whose number appears in the prompt."""
    hits = _in_prompt(f)
    if all(hits) or not any(hits):
        return _among([])
    return _among(i for i, hit in enumerate(hits) if not hit)


def _log_gaps(f: Form) -> list[float]:
    logs = [math.log(max(v, 1e-9)) for v in f.values]
    return [min(abs(logs[i] - logs[j]) for j in range(CHOICES) if j != i) for i in range(CHOICES)]


def closest_pair(f: Form) -> Bet:
    """A choice of the two that lie closest together (answer and its near miss?)."""
    return _best(_log_gaps(f), largest=False)


def loner(f: Form) -> Bet:
    """The choice farthest from every other."""
    return _best(_log_gaps(f))


GUESSERS: Final[dict[str, Guesser]] = {
    "smallest": by_rank(0),
    "second-smallest": by_rank(1),
    "second-largest": by_rank(2),
    "largest": by_rank(3),
    "double-offered": has_partner((2.0,)),
    "half-offered": has_partner((0.5,)),
    "double-or-half-offered": has_partner((2.0, 0.5)),
    "ratio-hub": ratio_hub,
    "geometric-centre": geometric_centre,
    "arithmetic-centre": arithmetic_centre,
    "roundest-bytes": roundest_bytes,
    "roundest-text": roundest_text,
    "most-precise-text": most_precise_text,
    "odd-unit-out": odd_unit_out,
    "majority-unit": majority_unit,
    "longest-en": longest(lambda f: f.shown),
    "longest-el": longest(lambda f: f.shown_el),
    "shortest-en": shortest(lambda f: f.shown),
    "in-prompt": in_prompt,
    "not-in-prompt": not_in_prompt,
    "closest-pair": closest_pair,
    "loner": loner,
}


def hit_rates(questions: Sequence[GeneratedQuestion]) -> dict[str, float]:
    """Each guesser's mean weight on the correct choice over `questions`."""
    forms = [form_of(q) for q in questions]
    return {
        name: sum(guess(f)[f.answer] for f in forms) / len(forms)
        for name, guess in GUESSERS.items()
    }


def rank_shares(questions: Sequence[GeneratedQuestion]) -> tuple[float, ...]:
    """How often the answer is the smallest, second, third, largest of the four values."""
    counts = [0] * CHOICES
    for q in questions:
        values = q.choice_values
        answer = values[q.question.answer]
        counts[sum(v < answer for v in values)] += 1
    return tuple(c / len(questions) for c in counts)


def allowed_excess(n: int, p: float = HIT_MAX, z: float = 2.33) -> float:
    """One-sided 99 % sampling margin for a rate measured on `n` questions."""
    return z * math.sqrt(p * (1 - p) / n)
