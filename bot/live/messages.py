"""The messages of a live round: the lobby, each question's face (open and closed), its
results, the podium and the standings."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.domain import Locale, Post, Question, UserRef, choice_letter
from bot.formats import trimmed
from bot.i18n import Translator, translator
from bot.live.ports import BoardRow, LiveAnswer, LiveRound, Standing
from bot.messages import ANSWER, Button, ButtonStyle, Message
from bot.numeric import TYPE_NUMBER, numeric_target
from bot.render import MEDALS, _bar

JOIN = "live-join"
START = "live-start"
CANCEL = "live-cancel"
TOP = 5  # the round's standings shown under each question's results
FULL = 50  # the full standings' lines (the rest are counted)


def clock_time(at: datetime) -> str:
    """``09:30:15 UTC``: the fallback of the platforms' self-updating timestamps."""
    return f"{at:%H:%M:%S} UTC"


def _topic(r: LiveRound, t: Translator) -> str:
    return r.topic or t("the channel's questions")


def lobby_message(r: LiveRound, t: Translator, *, players: int = 0) -> Message:
    """ "Starts in 30 s — press Join", with Join (everyone) and Start now / Cancel (admins)."""
    body = [
        t(
            "{questions} questions · {seconds} s each · {topic}",
            questions=r.questions,
            seconds=r.seconds,
            topic=_topic(r, t),
        ),
        t("Press *Join* to play; the round starts at the time below."),
        t(
            "Points: 1,000 for a right answer at once, falling to 500 at the last second; "
            "a wrong answer scores 0."
        ),
    ]
    value = str(r.id)
    buttons = (
        Button(t("Join"), JOIN, 0, value, ButtonStyle.PRIMARY),
        Button(t("Start now"), START, 0, value),
        Button(t("Cancel"), CANCEL, 0, value, ButtonStyle.DANGER),
    )
    footer = t("starts {when}", when=clock_time(r.next_at))
    if players:
        footer += " · " + t.n("{count} joined", "{count} joined", players)
    return Message(
        title=t("Live round"),
        body="\n".join(body),
        buttons=buttons,
        footer=footer,
        countdown=r.next_at,
    )


def lobby_over(r: LiveRound, t: Translator, players: int, *, cancelled: bool) -> Message:
    """The lobby once the round started (or was cancelled): no buttons."""
    if cancelled:
        body = t("This live round was cancelled before it started.")
        footer = t("The live round was cancelled.")
    else:
        footer = t.n("{count} joined", "{count} joined", players)
        body = t.n(
            "The round has started with {count} player who joined (anyone may still answer).",
            "The round has started with {count} players who joined (anyone may still answer).",
            players,
        )
    return Message(title=t("Live round"), body=body, footer=footer)


def question_face(r: LiveRound, k: int, post: Post, question: Question) -> Message:
    """Question k: prompt, lettered choices and their buttons, the closing time counting
    down; closed, the answer instead of the buttons."""
    t = translator(r.locale)
    text = question.text(r.locale)
    lines = [text.prompt, ""]
    lines += [f"*{choice_letter(i)}.* {c}" for i, c in enumerate(text.choices)]
    title = t(
        "Live · question {number} of {total} · {topic}",
        number=k + 1,
        total=r.questions,
        topic=question.topic,
    )
    closed = post.closed_at is not None
    if closed:
        right = choice_letter(question.answer)
        footer = t.n("{count} answered", "{count} answered", post.answer_count)
        footer += " · " + t("closed · the answer: {letter}", letter=right)
        return Message(title=title, body="\n".join(lines), footer=footer)
    buttons = tuple(
        Button(choice_letter(i), ANSWER, post.id, str(i)) for i in range(len(text.choices))
    )
    if numeric_target(question) is not None:
        buttons += (Button(t("Type the number…"), TYPE_NUMBER, post.id, ""),)
    assert post.closes_at is not None
    footer = t("closes {when}", when=clock_time(post.closes_at))
    if post.answer_count:
        footer = t.n("{count} answered", "{count} answered", post.answer_count) + " · " + footer
    return Message(
        title=title,
        body="\n".join(lines),
        buttons=buttons,
        footer=footer,
        countdown=post.closes_at,
    )


def _name(user: UserRef) -> str:
    return user.display


def _table_lines(rows: Sequence[Standing], locale: Locale, limit: int) -> list[str]:
    t = translator(locale)
    lines = [
        t(
            "{rank}. {name} — {points} points ({correct} right)",
            rank=s.rank,
            name=_name(s.user),
            points=trimmed(s.points, locale),
            correct=s.correct,
        )
        for s in rows[:limit]
    ]
    if len(rows) > limit:
        lines.append(t.n("… and {count} more", "… and {count} more", len(rows) - limit))
    return lines


def results_message(
    r: LiveRound,
    k: int,
    question: Question,
    answers: Sequence[LiveAnswer],
    table: Sequence[Standing],
) -> Message:
    """Question k's results: the answer, how many chose each choice, the round's top 5."""
    t = translator(r.locale)
    text = question.text(r.locale)
    mine = [a for a in answers if a.k == k]
    counts = [0] * len(text.choices)
    for a in mine:
        if 0 <= a.choice < len(counts):
            counts[a.choice] += 1
    total = len(mine)
    right = sum(a.correct for a in mine)
    lines = [
        t(
            "The answer: *{letter}. {choice}*",
            letter=choice_letter(question.answer),
            choice=text.choices[question.answer],
        ),
        t("{right} of {total} right.", right=right, total=total),
        "",
    ]
    for i, n in enumerate(counts):
        mark = " ✅" if i == question.answer else ""
        lines.append(f"{choice_letter(i)} {_bar(n, total)} {n}{mark}")
    typed = total - sum(counts)
    if typed:
        lines.append(t.n("{count} typed answer", "{count} typed answers", typed))
    if text.explanation:
        lines += ["", text.explanation]
    if table:
        lines += ["", t("*Top {count} of the round*", count=min(TOP, len(table)))]
        lines += _table_lines(table, r.locale, TOP)
    return Message(title=t("Results · question {number}", number=k + 1), body="\n".join(lines))


def podium_message(
    r: LiveRound, answers: Sequence[LiveAnswer], table: Sequence[Standing], *, stopped: bool
) -> Message:
    """1st to 3rd, the fastest right answer, the most right answers."""
    t = translator(r.locale)
    lines: list[str] = []
    if stopped:
        lines.append(t("The round was stopped early: these are the standings so far."))
    scoring = [s for s in table if s.points > 0]
    for medal, s in zip(MEDALS, scoring, strict=False):
        lines.append(
            t(
                "{medal} {name} — {points} points",
                medal=medal,
                name=_name(s.user),
                points=trimmed(s.points, r.locale),
            )
        )
    if not scoring:
        lines.append(t("Nobody scored in this round."))
    right = [a for a in answers if a.correct]
    if right:
        fastest = min(right, key=lambda a: (a.seconds, a.answered_at))
        lines.append(
            t(
                "⚡ Fastest right answer: {name}, {seconds} s (question {number})",
                name=_name(fastest.user),
                seconds=trimmed(fastest.seconds, r.locale, 1),
                number=fastest.k + 1,
            )
        )
        best = max(table, key=lambda s: (s.correct, s.points))
        lines.append(
            t(
                "🎯 Most right answers: {name}, {count}",
                name=_name(best.user),
                count=best.correct,
            )
        )
    lines.append(t("The full standings are in the thread."))
    return Message(title=t("Live round: the podium"), body="\n".join(lines))


def standings_message(r: LiveRound, table: Sequence[Standing]) -> Message:
    t = translator(r.locale)
    if not table:
        return Message(title=t("Standings"), body=t("Nobody answered."))
    return Message(title=t("Standings"), body="\n".join(_table_lines(table, r.locale, FULL)))


def board_message(rows: Sequence[BoardRow], locale: Locale) -> Message:
    t = translator(locale)
    if not rows:
        return Message(
            title=t("Live board"),
            body=t(
                "No live round has ended in this channel yet. An admin starts one with /quiz live."
            ),
        )
    lines = [
        t(
            "{rank}. {name} — {points} points ({correct} right, {rounds} rounds)",
            rank=row.rank,
            name=_name(row.user),
            points=trimmed(row.points, locale),
            correct=row.correct,
            rounds=row.rounds,
        )
        for row in rows
    ]
    return Message(title=t("Live board"), body="\n".join(lines))


def status_message(r: LiveRound, locale: Locale, table: Sequence[Standing]) -> Message:
    """`/quiz live` while a round runs: where it is, and the top 5."""
    t = translator(locale)
    if r.current < 0:
        where = t("In the lobby: starts {when}.", when=clock_time(r.next_at))
    else:
        where = t(
            "Question {number} of {total}; the next step is due {when}.",
            number=r.current + 1,
            total=r.questions,
            when=clock_time(r.next_at),
        )
    lines = [
        t(
            "{questions} questions · {seconds} s each · {topic}",
            questions=r.questions,
            seconds=r.seconds,
            topic=_topic(r, t),
        ),
        where,
    ]
    if table:
        lines += ["", *_table_lines(table, locale, TOP)]
    return Message(title=t("Live round"), body="\n".join(lines))


__all__ = [
    "CANCEL",
    "JOIN",
    "START",
    "board_message",
    "clock_time",
    "lobby_message",
    "lobby_over",
    "podium_message",
    "question_face",
    "results_message",
    "standings_message",
    "status_message",
]
