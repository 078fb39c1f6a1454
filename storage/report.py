"""The admin report's query, and `quizbot report` (`bot/cli.py` calls
`add_report_commands(subparsers)`).

Reading the answer table is fine here: the report is an occasional admin request, unlike
the boards. Figures are per question id across its versions; the wrong choice's wording
comes from the latest version asked.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.bank import question_from_dict
from bot.domain import BoardScope, ChannelRef, Locale, Platform, PostKind, PostState
from bot.errors import UserFacingError
from bot.report import QuestionReport, report_csv, report_text
from storage.models import AnswerRow, ChannelRow, FlagRow, PostRow, QuestionVersionRow


class SqlReportRepository:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def questions(
        self, channel: ChannelRef | None, scope: BoardScope, locale: Locale
    ) -> list[QuestionReport]:
        where: list[Any] = [
            PostRow.kind != PostKind.PRACTICE.value,
            PostRow.state != PostState.CLAIMED.value,
        ]
        if channel is not None:
            where += [
                ChannelRow.platform == str(channel.platform),
                ChannelRow.workspace == channel.workspace,
            ]
            if scope is BoardScope.CHANNEL:
                where.append(ChannelRow.channel == channel.channel)
        async with self._sessions() as s:
            asked = (
                await s.execute(
                    select(PostRow.question_id, func.count(), func.max(PostRow.id))
                    .join(ChannelRow, ChannelRow.id == PostRow.channel_id)
                    .where(*where)
                    .group_by(PostRow.question_id)
                )
            ).all()
            counts = await s.execute(
                select(PostRow.question_id, AnswerRow.choice, AnswerRow.correct, func.count())
                .join(AnswerRow, AnswerRow.post_id == PostRow.id)
                .join(ChannelRow, ChannelRow.id == PostRow.channel_id)
                .where(*where)
                .group_by(PostRow.question_id, AnswerRow.choice, AnswerRow.correct)
            )
            reported = dict(
                (
                    await s.execute(
                        select(FlagRow.question_id, func.count())
                        .join(PostRow, PostRow.id == FlagRow.post_id)
                        .join(ChannelRow, ChannelRow.id == PostRow.channel_id)
                        .where(*where)
                        .group_by(FlagRow.question_id)
                    )
                ).all()
            )
            latest = (
                await s.execute(
                    select(PostRow.question_id, QuestionVersionRow.data)
                    .join(QuestionVersionRow, QuestionVersionRow.hash == PostRow.question_hash)
                    .where(PostRow.id.in_([last for _, _, last in asked]))
                )
            ).all()
        versions = {qid: question_from_dict(json.loads(data)) for qid, data in latest}
        answers: dict[str, int] = {}
        correct: dict[str, int] = {}
        wrong: dict[str, dict[int, int]] = {}
        for qid, choice, ok, n in counts:
            answers[qid] = answers.get(qid, 0) + n
            if ok:
                correct[qid] = correct.get(qid, 0) + n
            else:
                by_choice = wrong.setdefault(qid, {})
                by_choice[choice] = by_choice.get(choice, 0) + n
        out = []
        for qid, times, _ in asked:
            question = versions[qid]
            top = min(wrong.get(qid, {}).items(), key=lambda kv: (-kv[1], kv[0]), default=None)
            choices = question.text(locale).choices
            out.append(
                QuestionReport(
                    question_id=qid,
                    topic=question.topic,
                    asked=times,
                    answers=answers.get(qid, 0),
                    correct=correct.get(qid, 0),
                    wrong_choice=top[0] if top else None,
                    wrong_count=top[1] if top else 0,
                    wrong_text=choices[top[0]] if top and top[0] < len(choices) else "",
                    reports=reported.get(qid, 0),
                )
            )
        return out


StoreOpener = Callable[[], AbstractAsyncContextManager[Any]]
"""Opens the configured database (the composition root's `open_store`)."""


def add_report_commands(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], open_store: StoreOpener
) -> argparse.ArgumentParser:
    """Add `report [--format text|csv] [--platform P --workspace W [--channel C]]`."""
    parser = subparsers.add_parser(
        "report",
        help="per-question statistics: times asked, answers, %% correct, most chosen wrong, "
        "members' reports",
    )
    parser.add_argument("--format", choices=("text", "csv"), default="text")
    parser.add_argument("--platform", choices=[str(p) for p in Platform], default=None)
    parser.add_argument("--workspace", default=None, help="only this workspace (with --platform)")
    parser.add_argument("--channel", default=None, help="only this channel (with --workspace)")
    parser.add_argument("--locale", choices=[str(loc) for loc in Locale], default="en")
    parser.set_defaults(func=lambda args: run_report(args, open_store))
    return parser


def run_report(args: argparse.Namespace, open_store: StoreOpener) -> int:
    channel, scope = _scope(args)

    async def load() -> list[QuestionReport]:
        async with open_store() as store:
            rows: list[QuestionReport] = await store.reports.questions(
                channel, scope, Locale(args.locale)
            )
            return rows

    rows = asyncio.run(load())
    sys.stdout.write(report_csv(rows) if args.format == "csv" else report_text(rows))
    return 0


def _scope(args: argparse.Namespace) -> tuple[ChannelRef | None, BoardScope]:
    if args.channel and not args.workspace:
        raise UserFacingError(
            "--channel needs --workspace (and --platform), e.g. "
            "--platform slack --workspace T0123 --channel C0456"
        )
    if args.workspace and not args.platform:
        raise UserFacingError(
            "--workspace needs --platform, e.g. --platform slack --workspace T0123"
        )
    if not args.workspace:
        return None, BoardScope.WORKSPACE
    ref = ChannelRef(Platform(args.platform), args.workspace, args.channel or "")
    return ref, BoardScope.CHANNEL if args.channel else BoardScope.WORKSPACE
