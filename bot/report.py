"""The admin report: per question — times asked, answers, % correct, the most chosen wrong
choice. `/quiz report [workspace]` in chat (admins), `quizbot report --format csv|text`
from the command line (`storage.report`). Practice is left out: it is retried on purpose.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from bot.basics import SCOPE_OPTION
from bot.commands import Admin, Command, Invocation, Reply
from bot.csv_cells import guarded_row
from bot.domain import BoardScope, ChannelRef, Locale, choice_letter
from bot.errors import UserFacingError
from bot.features import Feature, Parts
from bot.i18n import N_, translator
from bot.messages import Message
from bot.quiz import QuizService

CHAT_ROWS = 20  # a chat message stays readable; the CLI has them all


@dataclass(frozen=True, slots=True)
class QuestionReport:
    question_id: str
    topic: str
    asked: int  # channel posts of the question (scheduled and ask)
    answers: int
    correct: int
    wrong_choice: int | None = None  # the most chosen wrong choice (index), if any
    wrong_count: int = 0
    wrong_text: str = ""  # its wording in the latest version asked
    reports: int = 0  # members' flags on it ("Report a problem")

    @property
    def percent_correct(self) -> int:
        return round(100 * self.correct / self.answers) if self.answers else 0

    @property
    def wrong_letter(self) -> str:
        return choice_letter(self.wrong_choice) if self.wrong_choice is not None else ""


class ReportRepository(Protocol):
    async def questions(
        self, channel: ChannelRef | None, scope: BoardScope, locale: Locale
    ) -> list[QuestionReport]:
        """Per-question figures for a channel, its workspace, or everything (None)."""
        ...


def hardest_first(rows: Sequence[QuestionReport]) -> list[QuestionReport]:
    """Answered questions by % correct (lowest first), then unanswered ones."""
    return sorted(rows, key=lambda r: (r.answers == 0, r.percent_correct, -r.asked, r.question_id))


def report_message(
    rows: Sequence[QuestionReport], scope: BoardScope, locale: Locale, limit: int = CHAT_ROWS
) -> Message:
    t = translator(locale)
    title = (
        t("Question report · this workspace")
        if scope is BoardScope.WORKSPACE
        else t("Question report · this channel")
    )
    if not rows:
        return Message(title=title, body=t("No questions asked here yet."))
    ordered = hardest_first(rows)
    lines = []
    for r in ordered[:limit]:
        if r.answers:
            line = t(
                "*{question}* ({topic}): asked {asked}×, {answers} answers, correct: {percent}%",
                question=r.question_id,
                topic=r.topic,
                asked=r.asked,
                answers=r.answers,
                percent=r.percent_correct,
            )
        else:  # no share of nothing: 0 % would read as "everyone got it wrong"
            line = t(
                "*{question}* ({topic}): asked {asked}×, not answered yet",
                question=r.question_id,
                topic=r.topic,
                asked=r.asked,
            )
        if r.wrong_choice is not None:
            line += "; " + t(
                "most chosen wrong answer: {letter}. {text} ({count})",
                letter=r.wrong_letter,
                text=r.wrong_text,
                count=r.wrong_count,
            )
        if r.reports:
            line += "; " + t.n("reported {count} time", "reported {count} times", r.reports)
        lines.append(f"- {line}")
    footer = t("Hardest first. All questions: quizbot report --format csv")
    if len(ordered) > limit:
        footer = t("{shown} of {total} questions, hardest first.", shown=limit, total=len(rows))
        footer += " " + t("All questions: quizbot report --format csv")
    return Message(title=title, body="\n".join(lines), footer=footer)


CSV_HEADER = (
    "question_id",
    "topic",
    "times_asked",
    "answers",
    "correct",
    "percent_correct",
    "most_chosen_wrong_choice",
    "most_chosen_wrong_text",
    "most_chosen_wrong_count",
    "reports",
)


def report_csv(rows: Sequence[QuestionReport]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for r in hardest_first(rows):
        writer.writerow(
            guarded_row(
                (
                    r.question_id,
                    r.topic,
                    r.asked,
                    r.answers,
                    r.correct,
                    r.percent_correct,
                    r.wrong_letter,
                    r.wrong_text,
                    r.wrong_count,
                    r.reports,
                )
            )
        )
    return out.getvalue()


def report_text(rows: Sequence[QuestionReport]) -> str:
    """An aligned table for a terminal."""
    head = ("question", "topic", "asked", "answers", "correct", "reports", "most chosen wrong")
    body = [
        (
            r.question_id,
            r.topic,
            str(r.asked),
            str(r.answers),
            f"{r.percent_correct}%" if r.answers else "-",
            str(r.reports) if r.reports else "",
            f"{r.wrong_letter}. {r.wrong_text} ({r.wrong_count})" if r.wrong_letter else "",
        )
        for r in hardest_first(rows)
    ]
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in [head, *body]
    ]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def feature(parts: Parts) -> Feature:
    """The admin-only `/quiz report [workspace]`."""
    reports = parts.store.reports
    registry = parts.registry  # read per report: features added after this one add notes

    async def report(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        scope = BoardScope.CHANNEL
        for word in args:
            if word.lower() in ("workspace", "server"):
                scope = BoardScope.WORKSPACE
            elif word.lower() != "channel":
                t = translator(inv.locale)
                raise UserFacingError(
                    t(
                        "Unknown report {value!r}: use channel or workspace. "
                        "Example: /quiz report workspace",
                        value=word,
                    )
                )
        rows = await reports.questions(inv.channel, scope, inv.locale)
        message = report_message(rows, scope, inv.locale)
        notes = [n for note in registry.report_notes if (n := await note(inv.channel, inv.locale))]
        if notes:
            message = replace(message, body="\n\n".join([message.body, *notes]))
        return [Reply(message)]

    return Feature(
        "report",
        commands=[
            Command(
                "report",
                report,
                "report [workspace]",
                N_("per-question statistics for admins"),
                Admin.ALWAYS,
                options=(SCOPE_OPTION,),
            )
        ],
    )
