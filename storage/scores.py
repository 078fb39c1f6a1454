"""Score aggregates: folded in when a post closes (same transaction), read by the boards.

Scoring at close rather than at answer time keeps the board from leaking who got an open
question right, and lets streaks see the whole post (a missing answer breaks a streak).

Every board is a table of totals in board order, so reading one never sums rows:

| board                          | table           | rows                           |
|--------------------------------|-----------------|--------------------------------|
| channel, all-time (+ streaks)  | `scores`        | (channel, member)              |
| channel, day                   | `score_days`    | (channel, member, local date)  |
| channel week/month, workspace  | `score_periods` | (board, period start, member)  |

A board's top 10 and the caller's row are lookups in one index (`ix_*_rank`); its number
of players and the caller's rank (1 + players with more points) are sums over the board's
`score_histograms` rows (players per number of points), so no read grows with the number
of players. Per-topic counts for personal stats are in `score_topics`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy import Select, and_, case, func, literal, select, union_all, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.domain import (
    BoardPeriod,
    BoardScope,
    BoardWindow,
    ChannelRef,
    Leaderboard,
    LeaderboardRow,
    Platform,
    PlayerStats,
    PostKind,
    TopicStats,
    UserRef,
)
from bot.scoring import local_day, period_start, score_answer
from storage._sql import insert
from storage.models import (
    AnswerRow,
    ChannelRow,
    MemberRow,
    PostRow,
    QuestionVersionRow,
    ScoreDayRow,
    ScoreHistogramRow,
    ScorePeriodRow,
    ScoreRow,
    ScoreTopicRow,
)

ALL_TIME = date(1970, 1, 1)  # `starts` of the all-time rows in `score_periods`

Board = type[ScoreRow] | type[ScoreDayRow] | type[ScorePeriodRow]


def channel_board(channel_id: int, window: BoardWindow) -> str:
    return f"channel:{channel_id}:{window}"


def workspace_board(platform: str, workspace: str, window: BoardWindow) -> str:
    return f"workspace:{platform}:{workspace}:{window}"


# -- folding a closed post -------------------------------------------------------------


async def fold_post(s: AsyncSession, post: PostRow, channel: ChannelRow, dialect: str) -> None:
    """Add a just-closed post's answers to every aggregate (call inside the close).

    Streaks are read, then written: folds of one channel are serialized by a lock on the
    channel row (SQLite serializes every writer anyway). Rows are upserted in key order so
    concurrent folds of one workspace take row locks in the same order (no deadlock).
    """
    kind = PostKind(post.kind)
    if kind is PostKind.PRACTICE:
        return
    await s.execute(
        select(ChannelRow.id).where(ChannelRow.id == channel.id).with_for_update(key_share=True)
    )
    answers = (
        await s.execute(
            select(AnswerRow.member_id, AnswerRow.correct, AnswerRow.answered_at)
            .where(AnswerRow.post_id == post.id)
            .order_by(AnswerRow.member_id)
        )
    ).all()
    streaks: dict[int, int] = {}
    if answers:
        found = await s.execute(
            select(ScoreRow.member_id, ScoreRow.current_streak).where(
                ScoreRow.channel_id == channel.id,
                ScoreRow.member_id.in_([mid for mid, _, _ in answers]),
            )
        )
        streaks = {mid: streak for mid, streak in found}
    if kind is PostKind.SCHEDULED:
        # A scheduled question breaks every streak it does not extend; the answerers'
        # streaks are written back (absolute values) just below.
        await s.execute(
            update(ScoreRow)
            .where(ScoreRow.channel_id == channel.id, ScoreRow.current_streak > 0)
            .values(current_streak=0)
        )
    if not answers:
        return
    topic = await _topic(s, post.question_hash)
    ws = (channel.platform, channel.workspace)
    scores: list[dict[str, Any]] = []
    days: list[dict[str, Any]] = []
    periods: list[dict[str, Any]] = []
    topics: list[dict[str, Any]] = []
    for mid, correct, at in answers:
        scored = score_answer(kind, correct, streaks.get(mid, 0))
        tally = {"points": scored.points, "correct": int(correct), "answered": 1}
        scores.append(
            {
                "channel_id": channel.id,
                "member_id": mid,
                **tally,
                "current_streak": scored.streak,
                "best_streak": scored.streak,
                "reached_at": at,
            }
        )
        day = local_day(at, channel.timezone)
        days.append(
            {"channel_id": channel.id, "member_id": mid, "day": day, **tally, "reached_at": at}
        )
        for board, starts in _period_keys(channel.id, ws, day):
            periods.append(
                {"board": board, "starts": starts, "member_id": mid, **tally, "reached_at": at}
            )
        topics.append(
            {
                "channel_id": channel.id,
                "member_id": mid,
                "topic": topic,
                "answered": 1,
                "correct": int(correct),
            }
        )
    gained = {row["member_id"]: row["points"] for row in scores}
    hist: dict[tuple[str, date, int], int] = defaultdict(int)
    ins = insert(dialect, ScoreRow)
    greatest = func.max if dialect == "sqlite" else func.greatest
    done = await s.execute(
        ins.on_conflict_do_update(
            index_elements=["channel_id", "member_id"],
            set_={
                **_added(ScoreRow, ins),
                "current_streak": ins.excluded.current_streak,
                "best_streak": greatest(ScoreRow.best_streak, ins.excluded.best_streak),
            },
        ).returning(ScoreRow.member_id, ScoreRow.points, ScoreRow.answered),
        scores,
    )
    everyone = channel_board(channel.id, BoardWindow.ALL)
    for mid, points, answered in done:
        _moved(hist, (everyone, ALL_TIME), points, gained[mid], answered)
    ins = insert(dialect, ScoreDayRow)
    done = await s.execute(
        ins.on_conflict_do_update(
            index_elements=["channel_id", "member_id", "day"], set_=_added(ScoreDayRow, ins)
        ).returning(
            ScoreDayRow.member_id, ScoreDayRow.day, ScoreDayRow.points, ScoreDayRow.answered
        ),
        days,
    )
    daily = channel_board(channel.id, BoardWindow.DAY)
    for mid, day, points, answered in done:
        _moved(hist, (daily, day), points, gained[mid], answered)
    ins = insert(dialect, ScorePeriodRow)
    periods.sort(key=lambda r: (r["board"], r["starts"], r["member_id"]))
    done = await s.execute(
        ins.on_conflict_do_update(
            index_elements=["board", "starts", "member_id"], set_=_added(ScorePeriodRow, ins)
        ).returning(
            ScorePeriodRow.board,
            ScorePeriodRow.starts,
            ScorePeriodRow.member_id,
            ScorePeriodRow.points,
            ScorePeriodRow.answered,
        ),
        periods,
    )
    for board, starts, mid, points, answered in done:
        _moved(hist, (board, starts), points, gained[mid], answered)
    changes = [
        {"board": b, "starts": st, "points": p, "players": n}
        for (b, st, p), n in sorted(hist.items())
        if n
    ]
    if changes:
        ins = insert(dialect, ScoreHistogramRow)
        await s.execute(
            ins.on_conflict_do_update(
                index_elements=["board", "starts", "points"],
                set_={"players": ScoreHistogramRow.players + ins.excluded.players},
            ),
            changes,
        )
    ins = insert(dialect, ScoreTopicRow)
    await s.execute(
        ins.on_conflict_do_update(
            index_elements=["channel_id", "member_id", "topic"],
            set_={
                "answered": ScoreTopicRow.answered + ins.excluded.answered,
                "correct": ScoreTopicRow.correct + ins.excluded.correct,
            },
        ),
        topics,
    )


def _moved(
    hist: dict[tuple[str, date, int], int],
    board: tuple[str, date],
    points: int,
    gained: int,
    answered: int,
) -> None:
    """A player's move in a board's histogram, from the row an upsert returned: a new row
    (its first answer) adds a player at `points`; a score that grew moves one."""
    if answered == 1:
        hist[(*board, points)] += 1
    elif gained:
        hist[(*board, points)] += 1
        hist[(*board, points - gained)] -= 1


def _period_keys(channel_id: int, ws: tuple[str, str], day: date) -> list[tuple[str, date]]:
    week = period_start(BoardWindow.WEEK, day)
    month = period_start(BoardWindow.MONTH, day)
    return [
        (channel_board(channel_id, BoardWindow.WEEK), week),
        (channel_board(channel_id, BoardWindow.MONTH), month),
        (workspace_board(*ws, BoardWindow.DAY), day),
        (workspace_board(*ws, BoardWindow.WEEK), week),
        (workspace_board(*ws, BoardWindow.MONTH), month),
        (workspace_board(*ws, BoardWindow.ALL), ALL_TIME),
    ]


def _added(model: Board, ins: Any) -> dict[str, Any]:
    """Upsert assignments that add one answer's tally to a total.

    `reached_at` is when the total reached its points: the latest scoring answer, or the
    earliest answer while the total is 0. Folds may arrive out of answer order (posts
    close in any order), hence the comparisons.
    """
    new, old = ins.excluded.reached_at, model.reached_at
    return {
        "points": model.points + ins.excluded.points,
        "correct": model.correct + ins.excluded.correct,
        "answered": model.answered + ins.excluded.answered,
        "reached_at": case(
            (ins.excluded.points > 0, case((and_(model.points > 0, old > new), old), else_=new)),
            (model.points > 0, old),
            (new < old, new),
            else_=old,
        ),
    }


async def _topic(s: AsyncSession, content_hash: str) -> str:
    data = (
        await s.execute(
            select(QuestionVersionRow.data).where(QuestionVersionRow.hash == content_hash)
        )
    ).scalar_one()
    return str(json.loads(data)["topic"])


# -- reading boards --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Source:
    model: Board  # the rows of the board
    where: tuple[Any, ...]
    board: str  # its key in score_histograms
    starts: date


class SqlScoreRepository:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions
        self._channel_ids: dict[ChannelRef, int] = {}  # rows are never deleted

    async def leaderboard(
        self,
        channel: ChannelRef,
        caller: UserRef | None,
        limit: int = 10,
        *,
        scope: BoardScope = BoardScope.CHANNEL,
        period: BoardPeriod | None = None,
    ) -> Leaderboard:
        """The top `limit` of a board, its number of players and the caller's own row.

        Two statements: the top rows with the caller's row (one UNION ALL of two index
        lookups), then — only when the board is longer than the top — the number of
        players and of those ahead of the caller, summed from the board's histogram.
        """
        period = period or BoardPeriod(BoardWindow.ALL)
        rows: list[LeaderboardRow] = []
        mine = None
        players = 0
        async with self._sessions() as s:
            src = await self._source(s, channel, scope, period)
            if src is not None:
                top, own = await self._top_and_caller(s, src, caller, limit)
                for i, (points, correct, answered, user) in enumerate(top):
                    rank = rows[-1].rank if rows and rows[-1].points == points else i + 1
                    rows.append(LeaderboardRow(rank, user, points, correct, answered))
                players = len(rows)
                if caller is not None:
                    mine = next((r for r in rows if r.user.key == caller.key), None)
                if len(rows) == limit:
                    h = ScoreHistogramRow
                    ahead = h.points > (own[0] if own is not None else 0)
                    players, above = (
                        await s.execute(
                            select(
                                func.coalesce(func.sum(h.players), 0),
                                func.coalesce(func.sum(case((ahead, h.players), else_=0)), 0),
                            ).where(h.board == src.board, h.starts == src.starts)
                        )
                    ).one()
                    if mine is None and own is not None:
                        mine = LeaderboardRow(above + 1, own[3], *own[:3])
        return Leaderboard(
            rows=tuple(rows),
            players=players,
            caller=mine,
            window=period.window,
            scope=scope,
            first_day=period.first,
            last_day=period.last,
        )

    async def _source(
        self, s: AsyncSession, channel: ChannelRef, scope: BoardScope, period: BoardPeriod
    ) -> _Source | None:
        window, starts = period.window, _starts(period)
        if scope is BoardScope.WORKSPACE:
            board = workspace_board(str(channel.platform), channel.workspace, window)
            return _Source(
                ScorePeriodRow,
                (ScorePeriodRow.board == board, ScorePeriodRow.starts == starts),
                board,
                starts,
            )
        cid = self._channel_ids.get(channel)
        if cid is None:
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
                return None
            self._channel_ids[channel] = cid
        board = channel_board(cid, window)
        if window is BoardWindow.ALL:
            return _Source(ScoreRow, (ScoreRow.channel_id == cid,), board, starts)
        if window is BoardWindow.DAY:
            where = (ScoreDayRow.channel_id == cid, ScoreDayRow.day == starts)
            return _Source(ScoreDayRow, where, board, starts)
        where = (ScorePeriodRow.board == board, ScorePeriodRow.starts == starts)
        return _Source(ScorePeriodRow, where, board, starts)

    async def _top_and_caller(
        self, s: AsyncSession, src: _Source, caller: UserRef | None, limit: int
    ) -> tuple[list[tuple[int, int, int, UserRef]], tuple[int, int, int, UserRef] | None]:
        """The top `limit` rows in board order, and the caller's row (wherever it is)."""
        m = src.model

        def rows(tag: int) -> Select[Any, *tuple[Any, ...]]:
            return (
                select(
                    m.points,
                    m.correct,
                    m.answered,
                    m.reached_at,
                    m.member_id,
                    MemberRow.platform,
                    MemberRow.workspace,
                    MemberRow.user_id,
                    MemberRow.display_name,
                    literal(tag).label("tag"),
                )
                .join(MemberRow, MemberRow.id == m.member_id)
                .where(*src.where)
            )

        order = (m.points.desc(), m.correct.desc(), m.reached_at.asc(), m.member_id.asc())
        stmt: Any = select(rows(1).order_by(*order).limit(limit).subquery())
        if caller is not None:
            own = rows(0).where(
                MemberRow.platform == str(caller.platform),
                MemberRow.workspace == caller.workspace,
                MemberRow.user_id == caller.user,
            )
            stmt = union_all(stmt, own)
        top: list[tuple[Any, ...]] = []
        mine = None
        for (
            points,
            correct,
            answered,
            reached,
            mid,
            platform,
            ws,
            uid,
            name,
            tag,
        ) in await s.execute(stmt):
            row = (points, correct, answered, UserRef(Platform(platform), ws, uid, name))
            if tag:
                top.append((-points, -correct, reached, mid, row))
            else:
                mine = row
        top.sort(key=lambda t: t[:4])  # a UNION keeps no order
        return [t[4] for t in top], mine

    async def player_stats(self, channel: ChannelRef, user: UserRef) -> PlayerStats | None:
        """A member's all-time results in a channel, with accuracy per topic."""
        async with self._sessions() as s:
            found = (
                await s.execute(
                    select(ScoreRow, MemberRow)
                    .join(MemberRow, MemberRow.id == ScoreRow.member_id)
                    .join(ChannelRow, ChannelRow.id == ScoreRow.channel_id)
                    .where(
                        ChannelRow.platform == str(channel.platform),
                        ChannelRow.workspace == channel.workspace,
                        ChannelRow.channel == channel.channel,
                        MemberRow.platform == str(user.platform),
                        MemberRow.workspace == user.workspace,
                        MemberRow.user_id == user.user,
                    )
                )
            ).first()
            if found is None:
                return None
            sc, member = found
            topics = await s.execute(
                select(ScoreTopicRow.topic, ScoreTopicRow.answered, ScoreTopicRow.correct)
                .where(
                    ScoreTopicRow.channel_id == sc.channel_id,
                    ScoreTopicRow.member_id == sc.member_id,
                )
                .order_by(ScoreTopicRow.topic)
            )
            return PlayerStats(
                user=_user(member),
                points=sc.points,
                answered=sc.answered,
                correct=sc.correct,
                current_streak=sc.current_streak,
                best_streak=sc.best_streak,
                topics=tuple(TopicStats(t, a, c) for t, a, c in topics),
            )


def _starts(period: BoardPeriod) -> date:
    if period.window is BoardWindow.ALL:
        return ALL_TIME
    if period.first is None:
        raise ValueError(f"a {period.window} board needs its first day")
    return period.first


def _user(m: MemberRow) -> UserRef:
    return UserRef(Platform(m.platform), m.workspace, m.user_id, m.display_name)
