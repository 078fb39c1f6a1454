"""What the form of the choices gives away: bank-wide figures and per-question warnings.

A test-wise player who picks the longest choice, or always the same letter, must not top
the board without reading the question (docs/content-guide.md, "The form of the choices").

Bank-wide limits (breaking one is an error; `quizbot questions lint` exits 1):
- the correct choice is the uniquely longest choice, by characters, in at most 25 % of
  the questions, counted separately for every locale;
- each answer position A-D holds 15-35 % of the answers.

Per-question warnings:
- wide margin: the correct choice is uniquely longest and at least 1.5x as long as the
  longest distractor, a give-away even where the bank-wide share is fine;
- joke distractor at difficulty 2 or 3: a distractor matches one of `JOKE_PATTERNS`, a short
  list of tell-tale subjects no practitioner would believe (fonts, cooling, clock speed,
  encryption, ...). It is a heuristic: it finds only what it lists, so extend the list when
  a new kind slips through;
- near-duplicate choices: two choices of one locale whose difflib ratio is at least 0.9
  after normalising case, punctuation and spaces. Choices that differ only in numbers or
  code identifiers ("16.0 GiB" / "8.0 GiB", "ShardingStrategy.NO_SHARD" / "...FULL_SHARD")
  are the point of the question and not flagged.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Final

from bot.bank import QuestionBank
from bot.domain import Locale, Question, choice_letter

LONGEST_SHARE_MAX: Final = 0.25
POSITION_SHARE_MIN: Final = 0.15
POSITION_SHARE_MAX: Final = 0.35
LIMITED_POSITIONS: Final = 4  # A-D: every question in the bank has four choices
WIDE_MARGIN: Final = 1.5
NEAR_DUPLICATE: Final = 0.9
JOKE_MIN_DIFFICULTY: Final = 2

# Subjects that have nothing to do with memory, written as whole words or stems; English
# and Greek, matched case-insensitively.
JOKE_PATTERNS: Final = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bfont\b",
        r"\bcooling\b",
        r"\bfan speed\b",
        r"\bclock speed\b",
        r"\bencrypt",
        r"\bphysically (splits?|breaks?|melts?)\b",
        r"\btemperature\b",
        r"\b(colou?rs?|rgb|wallpaper|brightness)\b",
        r"\bmore accurate\b",
        r"\baccuracy error\b",
        r"\bdisagree\b",
        r"\blog files?\b",
        r"\bzero values\b",
        r"γραμματοσειρ",
        r"ψύξη",
        r"ανεμιστήρ",
        r"συχνότητα ρολογιού",
        r"κρυπτογραφ",
        r"θερμοκρασ",
        r"χρώμα",
        r"πιο ακριβές",
        r"διαφωνούν",
        r"διασπάται φυσικά",
        r"μηδενικές τιμές",
    )
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One per-question warning: the question, the field it is about, what to change."""

    qid: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.qid}: {self.field}: {self.message}"


@dataclass(frozen=True, slots=True)
class LintReport:
    """The bank-wide figures and the per-question findings of one bank."""

    questions: int
    longest: dict[str, int]  # locale -> questions whose correct choice is uniquely longest
    positions: dict[str, int]  # letter -> questions whose answer has that letter
    findings: list[Finding] = field(default_factory=list)

    def longest_share(self, locale: str) -> float:
        return self.longest.get(locale, 0) / self.questions if self.questions else 0.0

    def position_share(self, letter: str) -> float:
        return self.positions.get(letter, 0) / self.questions if self.questions else 0.0

    def breaches(self) -> list[str]:
        """Every broken bank-wide limit, as a message naming the figure and the fix."""
        out: list[str] = []
        for locale in sorted(self.longest):
            share = self.longest_share(locale)
            if share > LONGEST_SHARE_MAX:
                out.append(
                    f"{locale}: the correct choice is the uniquely longest in "
                    f"{self.longest[locale]} of {self.questions} questions ({share:.1%}), above "
                    f"the {LONGEST_SHARE_MAX:.0%} limit; write the distractors as long and as "
                    f"specific as the answer, or shorten the answer"
                )
        for index in range(LIMITED_POSITIONS):
            letter = choice_letter(index)
            share = self.position_share(letter)
            if not POSITION_SHARE_MIN <= share <= POSITION_SHARE_MAX:
                out.append(
                    f"answer position {letter} holds {self.positions.get(letter, 0)} of "
                    f"{self.questions} answers ({share:.1%}), outside "
                    f"{POSITION_SHARE_MIN:.0%}-{POSITION_SHARE_MAX:.0%}; move answers "
                    f"{'to' if share < POSITION_SHARE_MIN else 'away from'} {letter} "
                    f"(reorder every locale's choices and update answer)"
                )
        return out


def lint_bank(bank: QuestionBank) -> LintReport:
    """Measure the bank's choices: the two bank-wide figures and every warning."""
    longest: Counter[str] = Counter()
    positions: Counter[str] = Counter()
    findings: list[Finding] = []
    for q in bank:
        positions[choice_letter(q.answer)] += 1
        for locale, text in q.texts.items():
            longest.setdefault(str(locale), 0)  # every locale is reported, even at 0
            margin = longest_margin(text.choices, q.answer)
            if margin is not None:
                longest[str(locale)] += 1
                if margin >= WIDE_MARGIN:
                    findings.append(
                        Finding(
                            q.id,
                            f"{locale}.choices[{q.answer}]",
                            f"the correct choice is {margin:.2f}x as long as the longest "
                            f"distractor (warned from {WIDE_MARGIN}x); lengthen the "
                            f"distractors or shorten the answer",
                        )
                    )
        findings.extend(_joke_findings(q))
        findings.extend(_near_duplicate_findings(q))
    return LintReport(len(bank), dict(longest), dict(positions), findings)


def longest_margin(choices: tuple[str, ...] | list[str], answer: int) -> float | None:
    """How many times longer the correct choice is than the longest distractor, when it
    is the uniquely longest choice; None otherwise."""
    others = [len(c) for i, c in enumerate(choices) if i != answer]
    if not others or len(choices[answer]) <= max(others):
        return None
    return len(choices[answer]) / max(max(others), 1)


def joke_pattern(text: str) -> str | None:
    """The tell-tale pattern a choice matches, or None."""
    for pattern in JOKE_PATTERNS:
        if pattern.search(text):
            return pattern.pattern
    return None


def _joke_findings(q: Question) -> list[Finding]:
    if q.difficulty < JOKE_MIN_DIFFICULTY:
        return []
    out: list[Finding] = []
    for locale, text in q.texts.items():
        for i, choice in enumerate(text.choices):
            if i == q.answer or (pattern := joke_pattern(choice)) is None:
                continue
            out.append(
                Finding(
                    q.id,
                    f"{locale}.choices[{i}]",
                    f"{choice!r} reads as a joke distractor (matches {pattern!r}); at "
                    f"difficulty {q.difficulty} write a misconception a practitioner "
                    f"could believe",
                )
            )
    return out


def _normalised(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


_CODE_OR_NUMBER = re.compile(r"[\d_.()\[\]=/]")


def differ_only_in_code(a: str, b: str) -> bool:
    """Whether every word that differs between `a` and `b` is a number or code identifier."""
    words_a, words_b = a.casefold().split(), b.casefold().split()
    matcher = SequenceMatcher(None, words_a, words_b, autojunk=False)
    changed = [
        word
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
        for word in (*words_a[i1:i2], *words_b[j1:j2])
    ]
    return all(_CODE_OR_NUMBER.search(word) for word in changed)


def _near_duplicate_findings(q: Question) -> list[Finding]:
    out: list[Finding] = []
    for locale, text in q.texts.items():
        for (i, a), (j, b) in itertools.combinations(enumerate(text.choices), 2):
            if differ_only_in_code(a, b):
                continue
            ratio = SequenceMatcher(None, _normalised(a), _normalised(b)).ratio()
            if ratio >= NEAR_DUPLICATE:
                out.append(
                    Finding(
                        q.id,
                        f"{locale}.choices[{i}]",
                        f"near-duplicate of {locale}.choices[{j}] (similarity {ratio:.2f}, "
                        f"warned from {NEAR_DUPLICATE}); make each choice a distinct claim",
                    )
                )
    return out


def locales_of(report: LintReport) -> list[str]:
    """The report's locales in the bank's usual order (en first)."""
    known = [str(loc) for loc in Locale if str(loc) in report.longest]
    return known + sorted(set(report.longest) - set(known))
