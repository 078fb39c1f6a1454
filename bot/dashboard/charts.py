"""The dashboard's charts as values: what is drawn and the sentence it proves. The web
adapter draws them as SVG (`adapters/web/dashboard/svg.py`); each comes with its data,
shown as a table too, so a screen reader reads the same figures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from bot.dashboard.ports import Activity, QuestionStats
from bot.i18n import Translator

TOO_EASY = 0.9  # above: the question teaches little
TOO_HARD = 0.2  # below: mostly guesses
TARGET = (0.6, 0.8)  # the band around ~70 % most quiz designers aim for
ENOUGH = 5  # answers before a question's rate means anything


class Tone(StrEnum):
    NORMAL = "normal"
    GOOD = "good"  # in the target band
    EASY = "easy"
    HARD = "hard"
    MUTED = "muted"


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    value: float
    text: str  # the value as the reader reads it ("42", "71 %")
    tone: Tone = Tone.NORMAL


@dataclass(frozen=True, slots=True)
class Chart:
    """`vertical`: columns over time (x: the labels); else horizontal bars (categories).
    `line`: a second series drawn over the columns (players), with its own name."""

    name: str  # an id, unique in the page
    title: str  # the finding, in a sentence
    description: str  # what is drawn, for <desc>
    x_label: str
    y_label: str
    bars: tuple[Bar, ...]
    vertical: bool = True
    maximum: float | None = None  # the value axis' top (None: the largest value)
    band: tuple[float, float] | None = None  # a shaded range on the value axis
    band_label: str = ""
    line: tuple[float, ...] = ()
    line_label: str = ""


def percent(fraction: float) -> int:
    return round(100 * fraction)


def _change(now: int, before: int, t: Translator) -> str:
    if before == 0:
        return t("new this week") if now else t("none this week")
    delta = round(100 * (now - before) / before)
    if delta > 0:
        return t("up {delta} % (week on week)", delta=delta)
    if delta < 0:
        return t("down {delta} % (week on week)", delta=-delta)
    return t("the same as the week before")


def activity_chart(days: Sequence[Activity], labels: Sequence[str], t: Translator) -> Chart:
    """Answers per day (columns) and players per day (the line), one entry per label."""
    total = sum(d.answered for d in days)
    busiest = max(days, key=lambda d: d.answered, default=None)
    if busiest is None or total == 0:
        title = t("No answers in these {count} days yet", count=len(labels))
    else:
        day = busiest.starts.strftime("%d/%m")
        title = t(
            "{total} answers in {count} days; the busiest day was {day} with {answers}",
            total=total,
            count=len(labels),
            day=day,
            answers=busiest.answered,
        )
    by_day = {f"{d.starts:%m-%d}": d for d in days}
    bars = tuple(
        Bar(label, float(a.answered if a else 0), str(a.answered if a else 0))
        for label in labels
        for a in [by_day.get(label)]
    )
    players = tuple(float(a.players if a else 0) for label in labels for a in [by_day.get(label)])
    return Chart(
        "activity",
        title,
        t("Answers per day as columns, players per day as a line."),
        t("day"),
        t("answers"),
        bars,
        line=players,
        line_label=t("players"),
    )


def weekly_chart(weeks: Sequence[Activity], labels: Sequence[str], t: Translator) -> Chart:
    by_week = {f"{w.starts:%m-%d}": w for w in weeks}
    series = [by_week.get(label) for label in labels]
    now = series[-1].players if series and series[-1] else 0
    before = series[-2].players if len(series) > 1 and series[-2] else 0
    change = _change(now, before, t)
    title = t.n(
        "{count} player this week, {change}",
        "{count} players this week, {change}",
        now,
        change=change,
    )
    return Chart(
        "weekly",
        title,
        t("Players per ISO week (Monday to Sunday), oldest first."),
        t("week starting"),
        t("players"),
        tuple(
            Bar(label, float(w.players if w else 0), str(w.players if w else 0))
            for label, w in zip(labels, series, strict=True)
        ),
    )


def topic_rates(questions: Sequence[QuestionStats]) -> list[tuple[str, int, int]]:
    """(topic, answered, correct), weakest first."""
    topics: dict[str, list[int]] = {}
    for q in questions:
        tally = topics.setdefault(q.topic, [0, 0])
        tally[0] += q.answered
        tally[1] += q.correct
    rows = [(topic, a, c) for topic, (a, c) in topics.items() if a]
    return sorted(rows, key=lambda r: (r[2] / r[1], r[0]))


def topic_chart(questions: Sequence[QuestionStats], t: Translator) -> Chart:
    rows = topic_rates(questions)
    if rows:
        topic, answered, correct = rows[0]
        title = t(
            "Weakest topic: {topic}, {count} answers at {rate} %",
            topic=topic,
            rate=percent(correct / answered),
            count=answered,
        )
    else:
        title = t("No topic has answers yet")
    bars = tuple(
        Bar(topic, 100 * c / a, f"{percent(c / a)} %", tone_of(c / a, a)) for topic, a, c in rows
    )
    return Chart(
        "topics",
        title,
        t("Share of correct answers per topic, weakest first."),
        t("correct (%)"),
        t("topic"),
        bars,
        vertical=False,
        maximum=100.0,
        band=(100 * TARGET[0], 100 * TARGET[1]),
        band_label=t("target 60–80 %"),
    )


def tone_of(rate: float, answered: int) -> Tone:
    if answered < ENOUGH:
        return Tone.MUTED
    if rate > TOO_EASY:
        return Tone.EASY
    if rate < TOO_HARD:
        return Tone.HARD
    if TARGET[0] <= rate <= TARGET[1]:
        return Tone.GOOD
    return Tone.NORMAL


def calibration_chart(questions: Sequence[QuestionStats], t: Translator) -> Chart:
    """How many questions (with enough answers) fall in each 10 % band of correct rate."""
    judged = [q for q in questions if q.answered >= ENOUGH]
    buckets = [0] * 10
    for q in judged:
        buckets[min(int(q.rate * 10), 9)] += 1
    easy = sum(1 for q in judged if q.rate > TOO_EASY)
    hard = sum(1 for q in judged if q.rate < TOO_HARD)
    near = sum(1 for q in judged if TARGET[0] <= q.rate <= TARGET[1])
    if not judged:
        title = t("No question has {count} answers yet", count=ENOUGH)
    elif easy or hard:
        title = t(
            "{outside} of {count} questions miss 20–90 %: {easy} too easy, {hard} too hard",
            outside=easy + hard,
            count=len(judged),
            easy=easy,
            hard=hard,
        )
    else:
        title = t(
            "Every question is within 20–90 %; {near} of {count} near the 70 % target",
            near=near,
            count=len(judged),
        )
    bars = []
    for i, n in enumerate(buckets):
        low = i * 10
        tone = Tone.HARD if low < 20 else Tone.EASY if low >= 90 else Tone.NORMAL
        if 60 <= low < 80:
            tone = Tone.GOOD
        bars.append(Bar(f"{low}–{low + 10} %", float(n), str(n), tone))
    return Chart(
        "calibration",
        title,
        t(
            "Number of questions per band of correct answers; questions with fewer than "
            "{count} answers are left out.",
            count=ENOUGH,
        ),
        t("answers correct (%)"),
        t("questions"),
        tuple(bars),
    )


def flagged(questions: Sequence[QuestionStats]) -> tuple[list[QuestionStats], list[QuestionStats]]:
    """(too easy, too hard), each with enough answers, most answered first."""
    judged = sorted((q for q in questions if q.answered >= ENOUGH), key=lambda q: -q.answered)
    return [q for q in judged if q.rate > TOO_EASY], [q for q in judged if q.rate < TOO_HARD]


__all__ = [
    "ENOUGH",
    "TARGET",
    "TOO_EASY",
    "TOO_HARD",
    "Bar",
    "Chart",
    "Tone",
    "activity_chart",
    "calibration_chart",
    "flagged",
    "percent",
    "tone_of",
    "topic_chart",
    "topic_rates",
    "weekly_chart",
]
