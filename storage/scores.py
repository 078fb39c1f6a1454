"""Score aggregates: folded in when a post closes (same transaction), read by the boards.

Scoring at close rather than at answer time keeps the board from leaking who got an open
question right, and lets streaks see the whole post (a missing answer breaks a streak).
"""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

from sqlalchemy import and_, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.domain import (
    ChannelRef,
    Leaderboard,
    LeaderboardRow,
    Platform,
    PostKind,
    UserRef,
)
from bot.scoring import score_answer
from storage._sql import insert
from storage.models import AnswerRow, ChannelRow, MemberRow, PostRow, ScoreDayRow, ScoreRow


def local_day(at: datetime, timezone: str) -> date:
    return at.astimezone(ZoneInfo(timezone)).date()


async def fold_post(s: AsyncSession, post: PostRow, channel: ChannelRow, dialect: str) -> None:
    """Add a just-closed post's answers to the channel's aggregates."""
    kind = PostKind(post.kind)
    if kind is PostKind.PRACTICE:
        return
    answers = (
        await s.execute(
            select(AnswerRow.member_id, AnswerRow.correct, AnswerRow.answered_at).where(
                AnswerRow.post_id == post.id
            )
        )
    ).all()
    found = await s.execute(
        select(ScoreRow.member_id, ScoreRow.current_streak).where(
            ScoreRow.channel_id == post.channel_id
        )
    )
    streaks = {mid: streak for mid, streak in found}
    answered = {mid for mid, _, _ in answers}
    for mid, correct, at in answers:
        scored = score_answer(kind, correct, streaks.get(mid, 0))
        row = {
            "channel_id": post.channel_id,
            "member_id": mid,
            "points": scored.points,
            "correct": int(correct),
            "answered": 1,
            "current_streak": scored.streak,
            "best_streak": scored.streak,
            "reached_at": at,
        }
        ins = insert(dialect, ScoreRow).values(row)
        await s.execute(
            ins.on_conflict_do_update(
                index_elements=["channel_id", "member_id"],
                set_={
                    "points": ScoreRow.points + scored.points,
                    "correct": ScoreRow.correct + int(correct),
                    "answered": ScoreRow.answered + 1,
                    "current_streak": scored.streak,
                    "best_streak": func.max(ScoreRow.best_streak, scored.streak)
                    if dialect == "sqlite"
                    else func.greatest(ScoreRow.best_streak, scored.streak),
                    "reached_at": _reached(dialect, scored.points, at),
                },
            )
        )
        day = insert(dialect, ScoreDayRow).values(
            channel_id=post.channel_id,
            member_id=mid,
            day=local_day(at, channel.timezone),
            points=scored.points,
            correct=int(correct),
            answered=1,
            reached_at=at,
        )
        await s.execute(
            day.on_conflict_do_update(
                index_elements=["channel_id", "member_id", "day"],
                set_={
                    "points": ScoreDayRow.points + scored.points,
                    "correct": ScoreDayRow.correct + int(correct),
                    "answered": ScoreDayRow.answered + 1,
                    "reached_at": _reached(dialect, scored.points, at, ScoreDayRow.reached_at),
                },
            )
        )
    if kind is PostKind.SCHEDULED:
        broken = [mid for mid, streak in streaks.items() if streak and mid not in answered]
        if broken:
            await s.execute(
                update(ScoreRow)
                .where(ScoreRow.channel_id == post.channel_id, ScoreRow.member_id.in_(broken))
                .values(current_streak=0)
            )


def _reached(dialect: str, points: int, at: datetime, col: object = ScoreRow.reached_at) -> object:
    # The tie-break time moves only when the score moves.
    return at if points else col


class SqlScoreRepository:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def leaderboard(
        self, channel: ChannelRef, caller: UserRef | None, limit: int = 10
    ) -> Leaderboard:
        async with self._sessions() as s:
            cid = (
                await s.execute(
                    select(ChannelRow.id).where(
                        ChannelRow.platform == str(channel.platform),
                        ChannelRow.workspace == channel.workspace,
                        ChannelRow.channel == channel.channel,
                    )
                )
            ).scalar_one_or_none()
            if cid is None:
                return Leaderboard(rows=(), players=0)
            base = and_(ScoreRow.channel_id == cid, ScoreRow.answered > 0)
            rows = (
                await s.execute(
                    select(ScoreRow, MemberRow)
                    .join(MemberRow, MemberRow.id == ScoreRow.member_id)
                    .where(base)
                    .order_by(
                        ScoreRow.points.desc(), ScoreRow.correct.desc(), ScoreRow.reached_at.asc()
                    )
                    .limit(limit)
                )
            ).all()
            players = (
                await s.execute(select(func.count()).select_from(ScoreRow).where(base))
            ).scalar_one()
            out: list[LeaderboardRow] = []
            for i, (sc, m) in enumerate(rows):
                rank = out[-1].rank if out and out[-1].points == sc.points else i + 1
                out.append(LeaderboardRow(rank, _user(m), sc.points, sc.correct, sc.answered))
            mine = None
            if caller is not None:
                mine = next((r for r in out if r.user.key == caller.key), None)
                if mine is None:
                    found = (
                        await s.execute(
                            select(ScoreRow, MemberRow)
                            .join(MemberRow, MemberRow.id == ScoreRow.member_id)
                            .where(
                                base,
                                MemberRow.platform == str(caller.platform),
                                MemberRow.workspace == caller.workspace,
                                MemberRow.user_id == caller.user,
                            )
                        )
                    ).first()
                    if found is not None:
                        sc, m = found
                        above = (
                            await s.execute(
                                select(func.count())
                                .select_from(ScoreRow)
                                .where(base, ScoreRow.points > sc.points)
                            )
                        ).scalar_one()
                        mine = LeaderboardRow(
                            above + 1, _user(m), sc.points, sc.correct, sc.answered
                        )
        return Leaderboard(rows=tuple(out), players=players, caller=mine)


def _user(m: MemberRow) -> UserRef:
    return UserRef(Platform(m.platform), m.workspace, m.user_id, m.display_name)
