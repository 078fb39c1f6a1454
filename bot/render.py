"""Builds the platform-neutral messages the core sends (question, outcome, reveal, board)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from bot.domain import (
    AnswerOutcome,
    AnswerStatus,
    BoardScope,
    BoardWindow,
    Leaderboard,
    LeaderboardRow,
    Locale,
    Post,
    PostKind,
    PostState,
    Question,
    Reveal,
    choice_letter,
)
from bot.formats import significant
from bot.i18n import N_, Translator, translator
from bot.messages import ANSWER, Button, Message
from bot.numeric import TYPE_NUMBER, numeric_target

MEDALS = ("🥇", "🥈", "🥉")


def local_time(at: datetime, timezone: str) -> str:
    """``2027-03-29 09:30 (Europe/Athens)``."""
    return f"{at.astimezone(ZoneInfo(timezone)):%Y-%m-%d %H:%M} ({timezone})"


def difficulty_stars(level: int) -> str:
    return "★" * level + "☆" * (3 - level)


def question_message(post: Post, question: Question, timezone: str) -> Message:
    """The public question: prompt, lettered choices, one button per choice, and a footer
    with the answered count and the close time. Never shows who chose what."""
    t = translator(post.locale)
    text = question.text(post.locale)
    lines = [text.prompt, ""]
    lines += [f"*{choice_letter(i)}.* {c}" for i, c in enumerate(text.choices)]
    closed = post.state is PostState.CLOSED
    buttons = (
        ()
        if closed
        else tuple(
            Button(choice_letter(i), ANSWER, post.id, str(i)) for i in range(len(text.choices))
        )
    )
    if not closed and numeric_target(question) is not None:
        # A generated question also takes a typed number ("predict the number").
        buttons += (Button(t("Type the number…"), TYPE_NUMBER, post.id, ""),)
    footer = [t.n("{count} answered", "{count} answered", post.answer_count)]
    if closed:
        footer.append(t("closed"))
    elif post.closes_at is not None and post.kind is not PostKind.PRACTICE:
        footer.append(t("closes {when}", when=local_time(post.closes_at, timezone)))
    title = t(
        "Question · {topic} · {stars}",
        topic=question.topic,
        stars=difficulty_stars(question.difficulty),
    )
    if post.kind is PostKind.PRACTICE:
        title = t(
            "Practice · {topic} · {stars}",
            topic=question.topic,
            stars=difficulty_stars(question.difficulty),
        )
    return Message(title=title, body="\n".join(lines), buttons=buttons, footer=" · ".join(footer))


def outcome_message(outcome: AnswerOutcome, locale: Locale) -> Message:
    """What the clicking user sees privately, at once."""
    t = translator(locale)
    q = outcome.question
    status = outcome.status
    if status is AnswerStatus.ERASED:
        return Message(
            body=t(
                "You asked the quiz to forget you, and this click arrived before that was "
                "done, so it was not kept. Click again to answer as a new player."
            )
        )
    if status is AnswerStatus.WRONG_CHANNEL:
        return Message(
            body=t(
                "This button belongs to a question of another channel; nothing was recorded. "
                "Answer with the buttons under the question itself."
            )
        )
    if status is AnswerStatus.UNKNOWN_POST or q is None:
        return Message(
            body=t("This question is not available any more. Ask for a new one with /quiz ask.")
        )
    if status is AnswerStatus.CLOSED:
        return Message(
            body=t(
                "This question is closed: the answer is in its thread. Your click was not counted."
            )
        )
    if status is AnswerStatus.INVALID_CHOICE:
        return Message(
            body=t(
                "That choice is not part of this question; pick one of the buttons A–{last}.",
                last=choice_letter(q.choice_count - 1),
            )
        )
    text = q.text(locale)
    assert outcome.choice is not None
    if outcome.value is not None:
        target = numeric_target(q)
        assert target is not None
        chosen = f"{significant(outcome.value, locale)} {target.unit}"
    else:
        chosen = f"{choice_letter(outcome.choice)}. {text.choices[outcome.choice]}"
    if status is AnswerStatus.ALREADY_ANSWERED:
        return Message(
            body=t(
                "You already answered this question ({choice}); only your first answer counts.",
                choice=chosen,
            )
        )
    if outcome.value is not None:
        head = _typed_head(outcome, q, chosen, locale)
    elif outcome.correct:
        head = t("✅ Correct: {choice}", choice=chosen)
    else:
        right = f"{choice_letter(q.answer)}. {text.choices[q.answer]}"
        head = t(
            "❌ Not quite. You chose {choice}; the answer is {right}.", choice=chosen, right=right
        )
    return Message(
        body=f"{head}\n\n{text.explanation}",
        footer=t("Your answer is hidden from the channel until the reveal."),
    )


def _typed_head(outcome: AnswerOutcome, q: Question, typed: str, locale: Locale) -> str:
    """The first line of the reply to a typed answer (`typed`: the value as shown)."""
    t = translator(locale)
    target = numeric_target(q)
    assert target is not None
    if outcome.correct:
        return t("✅ Correct: {value}", value=typed)
    return t(
        "❌ Not quite. You typed {value}; the answer is {right} (±{tolerance} {unit} "
        "counts as right).",
        value=typed,
        right=f"{significant(target.value, locale)} {target.unit}",
        tolerance=significant(target.tolerance, locale),
        unit=target.unit,
    )


def _guesses_lines(reveal: Reveal, locale: Locale) -> list[str]:
    """The true value and a histogram of the typed answers, by distance from it."""
    t = translator(locale)
    target = numeric_target(reveal.question)
    if target is None:
        return []
    lines = [
        "",
        t(
            "The number: {value} {unit} (±{tolerance} counted as right).",
            value=significant(target.value, locale),
            unit=target.unit,
            tolerance=significant(target.tolerance, locale),
        ),
    ]
    if not reveal.guesses:
        return lines
    bins = [0, 0, 0, 0, 0]
    for g in reveal.guesses:
        bins[_guess_bin(g, target.value, target.tolerance)] += 1
    labels = [
        t("far below (< −50%)"),
        t("below"),
        t("right (within ±{tolerance})", tolerance=significant(target.tolerance, locale)),
        t("above"),
        t("far above (> +50%)"),
    ]
    total = len(reveal.guesses)
    lines.append(t.n("{count} typed prediction:", "{count} typed predictions:", total))
    lines += [f"- {label}: {_bar(n, total)} {n}" for label, n in zip(labels, bins, strict=True)]
    return lines


def _guess_bin(guess: float, value: float, tolerance: float) -> int:
    if abs(guess - value) <= tolerance + 1e-6:
        return 2
    far = 0.5 * abs(value)
    if guess < value:
        return 0 if value - guess > far else 1
    return 4 if guess - value > far else 3


def reveal_message(reveal: Reveal, locale: Locale) -> Message:
    t = translator(locale)
    q = reveal.question
    text = q.text(locale)
    total = reveal.total
    lines = [f"*{choice_letter(q.answer)}.* {text.choices[q.answer]}", "", text.explanation, ""]
    lines.append(t.n("{count} answer:", "{count} answers:", total))
    for i, n in enumerate(reveal.distribution):
        pct = round(100 * n / total) if total else 0
        mark = " ✅" if i == q.answer else ""
        lines.append(f"- {choice_letter(i)}: {_bar(n, total)} {n} ({pct}%){mark}")
    lines += _guesses_lines(reveal, locale)
    if reveal.first_correct is not None:
        lines.append("")
        lines.append(t("First correct answer: {name}", name=reveal.first_correct.display))
    elif total or reveal.guesses:
        lines.append("")
        lines.append(t("Nobody got this one."))
    if reveal.leader is not None and reveal.leader.points > 0:
        lines.append(
            t(
                "Channel leader: {name} with {points} points",
                name=reveal.leader.user.display,
                points=reveal.leader.points,
            )
        )
    elif reveal.leader is not None:  # answers, but no point yet for anyone
        lines.append(t("Channel leader: nobody has scored yet."))
    if q.references:
        lines.append("")
        lines.append(t("Read more: {links}", links=" · ".join(q.references)))
    return Message(
        title=t("Answer: {letter}", letter=choice_letter(q.answer)), body="\n".join(lines)
    )


def _bar(n: int, total: int, width: int = 10) -> str:
    filled = round(width * n / total) if total else 0
    return "▇" * filled + "·" * (width - filled)


_BOARD_TITLES = {
    (BoardScope.CHANNEL, BoardWindow.ALL): N_("Leaderboard"),
    (BoardScope.CHANNEL, BoardWindow.DAY): N_("Leaderboard · today"),
    (BoardScope.CHANNEL, BoardWindow.WEEK): N_("Leaderboard · this week"),
    (BoardScope.CHANNEL, BoardWindow.MONTH): N_("Leaderboard · this month"),
    (BoardScope.WORKSPACE, BoardWindow.ALL): N_("Workspace leaderboard"),
    (BoardScope.WORKSPACE, BoardWindow.DAY): N_("Workspace leaderboard · today"),
    (BoardScope.WORKSPACE, BoardWindow.WEEK): N_("Workspace leaderboard · this week"),
    (BoardScope.WORKSPACE, BoardWindow.MONTH): N_("Workspace leaderboard · this month"),
}


def leaderboard_message(board: Leaderboard, locale: Locale) -> Message:
    """The top of a board with medals; the caller's own row below it when outside."""
    t = translator(locale)
    title = t(_BOARD_TITLES[(BoardScope(board.scope), BoardWindow(board.window))])
    dates = ""
    if board.first_day is not None and board.last_day is not None:
        dates = str(board.first_day)
        if board.last_day != board.first_day:
            dates += f" – {board.last_day}"
    if not board.rows:
        body = t("No scores yet: answer a question to get on the board.")
        return Message(title=title, body=body, footer=dates)
    lines = [board_line(r, t) for r in board.rows]
    if board.caller is not None and board.caller not in board.rows:
        lines += ["…", board_line(board.caller, t)]
    footer = t.n("{count} player", "{count} players", board.players)
    return Message(
        title=title, body="\n".join(lines), footer=" · ".join(p for p in (footer, dates) if p)
    )


def board_line(r: LeaderboardRow, t: Translator) -> str:
    # A medal is for points: a member with none has a place number only.
    medal = MEDALS[r.rank - 1] if r.rank <= len(MEDALS) and r.points > 0 else f"{r.rank}."
    return t(
        "{medal} {name} — {points} pts ({correct}/{answered} correct)",
        medal=medal,
        name=r.user.display,
        points=r.points,
        correct=r.correct,
        answered=r.answered,
    )
