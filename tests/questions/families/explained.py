"""A generated question's explanation as it must read in full: the steps as written, then
one note per distractor ("Not <choice>: <why>"), nothing cut (the tests and
bench/generate.py compare the assembled explanation with it)."""

from __future__ import annotations

from bot.domain import Locale
from questions.families.assemble import ANSWER, with_compounds
from questions.families.model import Draft, GeneratedQuestion


def explanation_in_full(draft: Draft, g: GeneratedQuestion, locale: Locale) -> str:
    pool = {c.misconception: c for c in with_compounds(draft).candidates}
    text = g.question.text(locale)
    shown = text.choices[g.question.answer]
    lead = "Not" if locale is Locale.EN else "Όχι"
    parts = [s.render(locale).replace(ANSWER, shown) for s in draft.steps]
    parts += [
        f"{lead} {choice}: {pool[name].why.render(locale)}"
        for choice, name in zip(text.choices, g.misconceptions, strict=True)
        if name is not None
    ]
    return " ".join(parts)
