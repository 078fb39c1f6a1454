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

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy import Select, case, func, literal, select, union_all
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
    TopicStats,
    UserRef,
)
from storage.board_keys import ALL_TIME, channel_board, workspace_board
from storage.models import (
    ChannelRow,
    MemberRow,
    ScoreDayRow,
    ScoreHistogramRow,
    ScorePeriodRow,
    ScoreRow,
    ScoreTopicRow,
)
from storage.refs import is_channel, is_member, user_ref
from storage.score_fold import Board

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
                rows, players, mine = await read_board(
                    s, src.model, src.where, src.board, caller, limit, src.starts
                )
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
                        *is_channel(channel),
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

    async def player_stats(self, channel: ChannelRef, user: UserRef) -> PlayerStats | None:
        """A member's all-time results in a channel, with accuracy per topic."""
        async with self._sessions() as s:
            found = (
                await s.execute(
                    select(ScoreRow, MemberRow)
                    .join(MemberRow, MemberRow.id == ScoreRow.member_id)
                    .join(ChannelRow, ChannelRow.id == ScoreRow.channel_id)
                    .where(
                        *is_channel(channel),
                        *is_member(user),
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
                user=user_ref(member),
                points=sc.points,
                answered=sc.answered,
                correct=sc.correct,
                current_streak=sc.current_streak,
                best_streak=sc.best_streak,
                topics=tuple(TopicStats(t, a, c) for t, a, c in topics),
            )

    async def players_stats(
        self, channels: Sequence[ChannelRef], users: Sequence[UserRef]
    ) -> dict[tuple[ChannelRef, str], PlayerStats]:
        """`player_stats` of each (channel, member) of one workspace that has results,
        keyed by (channel, member key): two statements for them all."""
        out: dict[tuple[ChannelRef, str], PlayerStats] = {}
        if not channels or not users:
            return out
        platform, workspace = str(channels[0].platform), channels[0].workspace
        by_name = {c.channel: c for c in channels}
        async with self._sessions() as s:
            found: list[Any] = []
            for part in _parts(sorted({u.user for u in users})):
                found += (
                    await s.execute(
                        select(ScoreRow, MemberRow, ChannelRow.channel)
                        .join(MemberRow, MemberRow.id == ScoreRow.member_id)
                        .join(ChannelRow, ChannelRow.id == ScoreRow.channel_id)
                        .where(
                            ChannelRow.platform == platform,
                            ChannelRow.workspace == workspace,
                            ChannelRow.channel.in_(sorted(by_name)),
                            MemberRow.platform == platform,
                            MemberRow.workspace == workspace,
                            MemberRow.user_id.in_(part),
                        )
                    )
                ).all()
            topics: dict[tuple[int, int], list[TopicStats]] = {}
            mids = sorted({sc.member_id for sc, _, _ in found})
            cids = sorted({sc.channel_id for sc, _, _ in found})
            for part in _parts(mids):
                rows = await s.execute(
                    select(
                        ScoreTopicRow.channel_id,
                        ScoreTopicRow.member_id,
                        ScoreTopicRow.topic,
                        ScoreTopicRow.answered,
                        ScoreTopicRow.correct,
                    )
                    .where(ScoreTopicRow.channel_id.in_(cids), ScoreTopicRow.member_id.in_(part))
                    .order_by(ScoreTopicRow.topic)
                )
                for cid, mid, topic, answered, correct in rows:
                    topics.setdefault((cid, mid), []).append(TopicStats(topic, answered, correct))
        for sc, member, name in found:
            user = user_ref(member)
            out[(by_name[name], user.key)] = PlayerStats(
                user=user,
                points=sc.points,
                answered=sc.answered,
                correct=sc.correct,
                current_streak=sc.current_streak,
                best_streak=sc.best_streak,
                topics=tuple(topics.get((sc.channel_id, sc.member_id), ())),
            )
        return out

    async def leaderboards(
        self,
        channel: ChannelRef,
        callers: Sequence[UserRef],
        limit: int = 10,
        *,
        scope: BoardScope = BoardScope.CHANNEL,
        period: BoardPeriod | None = None,
    ) -> dict[str, Leaderboard]:
        """`leaderboard` of one board for each of `callers` (by member key): the top, the
        callers' rows and the board's histogram, each read once for them all."""
        period = period or BoardPeriod(BoardWindow.ALL)
        found: tuple[list[LeaderboardRow], int, dict[str, LeaderboardRow | None]]
        found = ([], 0, {})
        async with self._sessions() as s:
            src = await self._source(s, channel, scope, period)
            if src is not None:
                found = await read_boards(
                    s, src.model, src.where, src.board, callers, limit, src.starts
                )
        rows, players, mine = found
        return {
            caller.key: Leaderboard(
                rows=tuple(rows),
                players=players,
                caller=mine.get(caller.key),
                window=period.window,
                scope=scope,
                first_day=period.first,
                last_day=period.last,
            )
            for caller in callers
        }


Entry = tuple[int, int, int, UserRef]  # a board's row: points, correct, answered, who


async def read_board(
    s: AsyncSession,
    model: Board,
    where: tuple[Any, ...],
    board: str,
    caller: UserRef | None,
    limit: int,
    starts: date = ALL_TIME,
) -> tuple[list[LeaderboardRow], int, LeaderboardRow | None]:
    """A board's top `limit` rows, its number of players and the caller's row: the top
    and the caller in one statement (a UNION ALL of two index lookups), then — only when
    the board is longer than the top — the players and those ahead of the caller, summed
    from the board's histogram (`board`, `starts` in `score_histograms`)."""
    top, owns = await _top_and_caller(s, model, where, [caller] if caller else [], limit)
    own = owns.get(caller.key) if caller is not None else None
    counts = None
    if len(top) == limit:
        h = ScoreHistogramRow
        ahead = h.points > (own[0] if own is not None else 0)
        players, above = (
            await s.execute(
                select(
                    func.coalesce(func.sum(h.players), 0),
                    func.coalesce(func.sum(case((ahead, h.players), else_=0)), 0),
                ).where(h.board == board, h.starts == starts)
            )
        ).one()
        counts = (players, above)
    return place_board(top, own, caller, limit, counts)


def place_board(
    top: list[Entry],
    own: Entry | None,
    caller: UserRef | None,
    limit: int,
    counts: tuple[int, int] | None,
) -> tuple[list[LeaderboardRow], int, LeaderboardRow | None]:
    """A board's rows ranked (equal points share a rank), its number of players and the
    caller's row, from its top `limit` entries in board order, the caller's own entry and
    — needed only when the top is full — the board's (players, players ahead of the
    caller) from its histogram."""
    rows: list[LeaderboardRow] = []
    mine = None
    for i, (points, correct, answered, user) in enumerate(top):
        rank = rows[-1].rank if rows and rows[-1].points == points else i + 1
        rows.append(LeaderboardRow(rank, user, points, correct, answered))
    players = len(rows)
    if caller is not None:
        mine = next((r for r in rows if r.user.key == caller.key), None)
    if len(rows) == limit and counts is not None:
        players, above = counts
        if mine is None and own is not None:
            mine = LeaderboardRow(above + 1, own[3], *own[:3])
    return rows, players, mine


async def read_boards(
    s: AsyncSession,
    model: Board,
    where: tuple[Any, ...],
    board: str,
    callers: Sequence[UserRef],
    limit: int,
    starts: date = ALL_TIME,
) -> tuple[list[LeaderboardRow], int, dict[str, LeaderboardRow | None]]:
    """`read_board` for many callers at once: the top and the callers' rows in one
    statement per `_PART` callers, then (a board longer than the top) its histogram once;
    each caller's row and rank are those `read_board` gives."""
    rows: list[LeaderboardRow] = []
    own: dict[str, Entry] = {}
    top: list[Entry] = []
    for i, part in enumerate(_parts(list(callers)) or [[]]):
        top_i, own_i = await _top_and_caller(s, model, where, part, limit if i == 0 else 0)
        top = top_i if i == 0 else top
        own.update(own_i)
    for i, (points, correct, answered, user) in enumerate(top):
        rank = rows[-1].rank if rows and rows[-1].points == points else i + 1
        rows.append(LeaderboardRow(rank, user, points, correct, answered))
    players = len(rows)
    in_top = {r.user.key: r for r in rows}
    mine: dict[str, LeaderboardRow | None] = {c.key: in_top.get(c.key) for c in callers}
    if len(rows) == limit:
        h = ScoreHistogramRow
        histogram = (
            await s.execute(select(h.points, h.players).where(h.board == board, h.starts == starts))
        ).all()
        players = sum(n for _, n in histogram)
        for caller in callers:
            if mine[caller.key] is None and (row := own.get(caller.key)) is not None:
                above = sum(n for p, n in histogram if p > row[0])
                mine[caller.key] = LeaderboardRow(above + 1, row[3], *row[:3])
    return rows, players, mine


async def _top_and_caller(
    s: AsyncSession, m: Board, where: tuple[Any, ...], callers: Sequence[UserRef], limit: int
) -> tuple[list[Entry], dict[str, Entry]]:
    """The top `limit` rows in board order (none: `limit` 0), and the callers' rows
    (wherever they are), by member key; the callers are of one workspace."""

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
            .where(*where)
        )

    order = (m.points.desc(), m.correct.desc(), m.reached_at.asc(), m.member_id.asc())
    parts: list[Any] = []
    if limit:
        parts.append(select(rows(1).order_by(*order).limit(limit).subquery()))
    if callers:
        first = callers[0]
        ids = sorted({c.user for c in callers})
        user_id = MemberRow.user_id == ids[0] if len(ids) == 1 else MemberRow.user_id.in_(ids)
        parts.append(
            rows(0).where(
                MemberRow.platform == str(first.platform),
                MemberRow.workspace == first.workspace,
                user_id,
            )
        )
    if not parts:
        return [], {}
    stmt: Any = parts[0] if len(parts) == 1 else union_all(*parts)
    top: list[tuple[Any, ...]] = []
    mine: dict[str, Entry] = {}
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
        user = UserRef(Platform(platform), ws, uid, name)
        row = (points, correct, answered, user)
        if tag:
            top.append((-points, -correct, reached, mid, row))
        else:
            mine[user.key] = row
    top.sort(key=lambda t: t[:4])  # a UNION keeps no order
    return [t[4] for t in top], mine


_PART = 500  # members named in one statement (SQLite and PostgreSQL take far more)


def _parts(items: Sequence[Any]) -> list[list[Any]]:
    return [list(items[i : i + _PART]) for i in range(0, len(items), _PART)]


def _starts(period: BoardPeriod) -> date:
    if period.window is BoardWindow.ALL:
        return ALL_TIME
    if period.first is None:
        raise ValueError(f"a {period.window} board needs its first day")
    return period.first
