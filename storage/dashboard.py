"""The dashboard's reads (`bot.dashboard.ports`): from the aggregates the close keeps,
each statement an index range of one workspace's rows; and its clinic uploads."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.bank import question_from_dict
from bot.dashboard.ports import (
    Activity,
    HistoryEntry,
    Overview,
    QuestionStats,
    Ranges,
    Streak,
    WebClinicJob,
)
from bot.domain import BoardWindow, ChannelRef, PostKind, Schedule, UserRef
from bot.team import Workspace
from storage._sql import added_id
from storage.board_keys import channel_board, workspace_board
from storage.models import (
    AnswerRow,
    ChannelRow,
    MemberRow,
    PostRow,
    QuestionVersionRow,
    ScheduleRow,
    ScoreDayTotalRow,
    ScoreHistogramRow,
    ScoreQuestionRow,
    ScoreRow,
    WebClinicRow,
)
from storage.refs import channel_ref, is_member, user_ref
from storage.schedules import _to_schedule


class SqlDashboard:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], default_zone: str) -> None:
        self._sessions = sessions
        self._default_zone = default_zone  # a channel not stored yet has the default

    async def _channel_rows(
        self, s: AsyncSession, ws: Workspace, channel: ChannelRef | None
    ) -> list[ChannelRow]:
        where: list[Any] = [ChannelRow.platform == str(ws.platform), ChannelRow.workspace == ws.id]
        if channel is not None:
            where.append(ChannelRow.channel == channel.channel)
        return list((await s.execute(select(ChannelRow).where(*where))).scalars())

    async def channels(self, workspace: Workspace) -> list[ChannelRef]:
        async with self._sessions() as s:
            rows = await self._channel_rows(s, workspace, None)
        return [channel_ref(r) for r in sorted(rows, key=lambda r: r.channel)]

    async def overview(
        self,
        workspace: Workspace,
        channel: ChannelRef | None,
        ranges: Ranges,
        streaks: int = 10,
    ) -> Overview:
        async with self._sessions() as s:
            rows = sorted(await self._channel_rows(s, workspace, channel), key=lambda r: r.channel)
            zone = rows[0].timezone if rows else self._default_zone
            days, weeks = ranges(zone)
            if not rows:
                return Overview(zone, (days, weeks), [], [], [], [], [])

            def board(window: BoardWindow) -> str:
                if channel is not None:
                    return channel_board(rows[0].id, window)
                return workspace_board(str(workspace.platform), workspace.id, window)

            ids = [r.id for r in rows]
            return Overview(
                zone,
                (days, weeks),
                *await _activity(
                    s, ids, board(BoardWindow.DAY), board(BoardWindow.WEEK), days, weeks
                ),
                await _questions(s, ids),
                await _streaks(s, {r.id: r for r in rows}, streaks),
                await _schedules(s, ids),
            )

    async def history(
        self, member: UserRef, limit: int = 20, before: int | None = None
    ) -> list[HistoryEntry]:
        async with self._sessions() as s:
            mid = (
                await s.execute(
                    select(MemberRow.id).where(
                        *is_member(member),
                    )
                )
            ).scalar_one_or_none()
            if mid is None:
                return []
            where: list[Any] = [AnswerRow.member_id == mid]
            if before is not None:
                where.append(AnswerRow.id < before)
            found = await s.execute(
                select(AnswerRow, PostRow.kind, ChannelRow, QuestionVersionRow.data)
                .join(PostRow, PostRow.id == AnswerRow.post_id)
                .join(ChannelRow, ChannelRow.id == PostRow.channel_id)
                .join(QuestionVersionRow, QuestionVersionRow.hash == PostRow.question_hash)
                .where(*where)
                .order_by(AnswerRow.id.desc())
                .limit(limit)
            )
            return [
                HistoryEntry(
                    a.id,
                    a.answered_at,
                    channel_ref(ch),
                    PostKind(kind),
                    question_from_dict(json.loads(data)),
                    a.choice,
                    a.correct,
                    a.value,
                )
                for a, kind, ch, data in found
            ]

    # -- the clinic's uploads ------------------------------------------------------------

    async def clinic_start(self, member: UserRef, name: str, now: datetime) -> int:
        row = WebClinicRow(
            platform=str(member.platform),
            workspace=member.workspace,
            user_id=member.user,
            name=name[:200],
            done=False,
            status="",
            title="",
            body="",
            png=None,
            created_at=now,
            updated_at=now,
        )
        async with self._sessions.begin() as s:
            return await added_id(s, row)

    async def clinic_status(self, job: int, status: str, now: datetime) -> None:
        async with self._sessions.begin() as s:
            await s.execute(
                update(WebClinicRow)
                .where(WebClinicRow.id == job, WebClinicRow.done.is_(False))
                .values(status=status, updated_at=now)
            )

    async def clinic_finish(
        self, job: int, title: str, body: str, png: bytes | None, now: datetime
    ) -> None:
        async with self._sessions.begin() as s:
            await s.execute(
                update(WebClinicRow)
                .where(WebClinicRow.id == job)
                .values(done=True, title=title, body=body, png=png, updated_at=now)
            )

    async def clinic_job(self, member: UserRef, job: int) -> WebClinicJob | None:
        async with self._sessions() as s:
            row = (
                await s.execute(select(WebClinicRow).where(WebClinicRow.id == job, *_owned(member)))
            ).scalar_one_or_none()
        return _job(row, member) if row is not None else None

    async def clinic_jobs(self, member: UserRef, limit: int = 10) -> Sequence[WebClinicJob]:
        async with self._sessions() as s:
            rows = (
                await s.execute(
                    select(WebClinicRow)
                    .where(*_owned(member))
                    .order_by(WebClinicRow.id.desc())
                    .limit(limit)
                )
            ).scalars()
            return [_job(r, member) for r in rows]

    async def clinic_purge(self, older_than: datetime) -> int:
        async with self._sessions.begin() as s:
            done = await s.execute(delete(WebClinicRow).where(WebClinicRow.updated_at < older_than))
        return int(done.rowcount)  # type: ignore[attr-defined]

    async def forget_clinic(self, member: UserRef) -> None:
        async with self._sessions.begin() as s:
            await s.execute(delete(WebClinicRow).where(*_owned(member)))


async def _activity(
    s: AsyncSession,
    ids: list[int],
    day_board: str,
    week_board: str,
    days: tuple[date, date],
    weeks: tuple[date, date],
) -> tuple[list[Activity], list[Activity]]:
    """Per day in `days` and per week starting in `weeks`: answers from `score_day_totals`
    (one range of days covering both, summed into weeks here), players from the day and
    week boards' histograms (one statement for both)."""
    first = min(days[0], weeks[0])
    last = max(days[1], weeks[1] + timedelta(days=6))
    t = ScoreDayTotalRow
    per_day: dict[date, tuple[int, int]] = {}
    for day, answered, correct in await s.execute(
        select(t.day, func.sum(t.answered), func.sum(t.correct))
        .where(t.channel_id.in_(ids), t.day >= first, t.day <= last)
        .group_by(t.day)
    ):
        per_day[day] = (int(answered or 0), int(correct or 0))
    h = ScoreHistogramRow
    players: dict[tuple[str, date], int] = {
        (board, starts): int(n or 0)
        for board, starts, n in await s.execute(
            select(h.board, h.starts, func.sum(h.players))
            .where(h.board.in_([day_board, week_board]), h.starts >= first, h.starts <= last)
            .group_by(h.board, h.starts)
        )
    }
    week_totals: dict[date, list[int]] = defaultdict(lambda: [0, 0])
    for day, (answered, correct) in per_day.items():
        monday = day - timedelta(days=day.weekday())
        week_totals[monday][0] += answered
        week_totals[monday][1] += correct
    return (
        [
            Activity(day, a, c, players.get((day_board, day), 0))
            for day, (a, c) in sorted(per_day.items())
            if days[0] <= day <= days[1]
        ],
        [
            Activity(monday, a, c, players.get((week_board, monday), 0))
            for monday, (a, c) in sorted(week_totals.items())
            if weeks[0] <= monday <= weeks[1]
        ],
    )


async def _questions(s: AsyncSession, ids: list[int]) -> list[QuestionStats]:
    q = ScoreQuestionRow
    found = await s.execute(
        select(
            q.question_id,
            func.max(q.topic),
            func.sum(q.asked),
            func.sum(q.answered),
            func.sum(q.correct),
        )
        .where(q.channel_id.in_(ids))
        .group_by(q.question_id)
    )
    return [QuestionStats(qid, topic, int(n), int(a), int(c)) for qid, topic, n, a, c in found]


async def _streaks(s: AsyncSession, rows: dict[int, ChannelRow], limit: int) -> list[Streak]:
    found = await s.execute(
        select(ScoreRow.channel_id, ScoreRow.current_streak, ScoreRow.best_streak, MemberRow)
        .join(MemberRow, MemberRow.id == ScoreRow.member_id)
        .where(ScoreRow.channel_id.in_(list(rows)), ScoreRow.current_streak > 0)
        .order_by(ScoreRow.current_streak.desc(), ScoreRow.best_streak.desc())
        .limit(limit)
    )
    return [
        Streak(
            user_ref(m),
            channel_ref(rows[cid]),
            current,
            best,
        )
        for cid, current, best, m in found
    ]


async def _schedules(s: AsyncSession, ids: list[int]) -> list[tuple[Schedule, str]]:
    """The channels' enabled schedules, each with its channel's time zone."""
    found = await s.execute(
        select(ScheduleRow, ChannelRow)
        .join(ChannelRow, ChannelRow.id == ScheduleRow.channel_id)
        .where(ScheduleRow.enabled.is_(True), ScheduleRow.channel_id.in_(ids))
        .order_by(ScheduleRow.id)
    )
    return [(_to_schedule(r, ch), ch.timezone) for r, ch in found.all()]


def _owned(member: UserRef) -> tuple[Any, ...]:
    return (
        WebClinicRow.platform == str(member.platform),
        WebClinicRow.workspace == member.workspace,
        WebClinicRow.user_id == member.user,
    )


def _job(row: WebClinicRow, member: UserRef) -> WebClinicJob:
    return WebClinicJob(
        row.id,
        member,
        row.name,
        row.done,
        row.status,
        row.title,
        row.body,
        row.png,
        row.created_at,
    )


__all__ = ["SqlDashboard"]
