"""A season's board in one statement, read from the aggregates the close keeps
(`season_scores`, `score_histograms`), never from the answers.

A UNION ALL of four index reads: the top by points (`ix_season_scores_rank`), the caller's
row (the members' and the season rows' primary keys), the top by accuracy
(`ix_season_scores_accuracy`, whose partial predicate is inlined so the planners match it)
and the board's number of players and of those ahead of the caller (its histogram rows).
One round trip instead of three; the statements are built once per shape and bound per
call, so no call pays for building or compiling them again. Ranks are then placed as on
every board (`storage.scores.place_board`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, case, func, literal, literal_column, null, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from bot.domain import LeaderboardRow, Platform, UserRef
from storage.board_keys import ALL_TIME
from storage.models import MemberRow, ScoreHistogramRow, SeasonScoreRow
from storage.scores import Entry, place_board

TOP, CALLER, ACCURATE, COUNTS = 1, 0, 2, 3  # each row's part of the board


def _statement(with_caller: bool, min_answers: int) -> Any:
    r, m, h = SeasonScoreRow, MemberRow, ScoreHistogramRow
    season: Any = bindparam("season")
    board: Any = bindparam("board")
    limit: Any = bindparam("limit")
    who = (m.platform, m.workspace, m.user_id, m.display_name)

    def rows(tag: int) -> Any:
        return (
            select(literal(tag).label("tag"), r.points, r.correct, r.answered, r.accuracy)
            .add_columns(r.reached_at, r.member_id, *who)
            .join(m, m.id == r.member_id)
            .where(r.season_id == season, r.board == board)
        )

    by_points = (r.points.desc(), r.correct.desc(), r.reached_at.asc(), r.member_id.asc())
    least: Any = literal_column(str(int(min_answers)))
    by_accuracy = (r.accuracy.desc(), r.correct.desc(), r.reached_at, r.member_id)
    parts: list[Any] = [
        select(rows(TOP).order_by(*by_points).limit(limit).subquery()),
        select(
            rows(ACCURATE).where(r.answered >= least).order_by(*by_accuracy).limit(limit).subquery()
        ),
    ]
    own_points: Any = literal(0)
    if with_caller:
        mine = (
            m.platform == bindparam("platform"),
            m.workspace == bindparam("workspace"),
            m.user_id == bindparam("user"),
        )
        parts.append(rows(CALLER).where(*mine))
        own_points = func.coalesce(
            select(r.points)
            .join(m, m.id == r.member_id)
            .where(r.season_id == season, r.board == board, *mine)
            .scalar_subquery(),
            0,
        )
    ahead = case((h.points > own_points, h.players), else_=0)
    parts.append(
        select(
            literal(COUNTS).label("tag"),
            func.coalesce(func.sum(h.players), 0),
            func.coalesce(func.sum(ahead), 0),
            *(null() for _ in range(8)),
        ).where(h.board == bindparam("histogram"), h.starts == ALL_TIME)
    )
    return union_all(*parts)


class SeasonBoardReader:
    """Reads season boards with statements built once per (caller or not, minimum)."""

    def __init__(self) -> None:
        self._statements: dict[tuple[bool, int], Any] = {}

    async def read(
        self,
        s: AsyncSession,
        season_id: int,
        board: int,
        histogram: str,
        caller: UserRef | None,
        limit: int,
        min_answers: int,
    ) -> tuple[list[LeaderboardRow], int, LeaderboardRow | None, tuple[LeaderboardRow, ...]]:
        """The board by points (ranked), its players, the caller's row, and the top by
        accuracy among members with `min_answers` answers or more."""
        shape = (caller is not None, int(min_answers))
        stmt = self._statements.get(shape)
        if stmt is None:
            stmt = self._statements[shape] = _statement(*shape)
        params: dict[str, Any] = {
            "season": season_id,
            "board": board,
            "limit": limit,
            "histogram": histogram,
        }
        if caller is not None:
            params |= {
                "platform": str(caller.platform),
                "workspace": caller.workspace,
                "user": caller.user,
            }
        top: list[tuple[Any, ...]] = []
        accurate: list[tuple[Any, ...]] = []
        own: Entry | None = None
        counts = (0, 0)
        found = await s.execute(stmt, params)
        for tag, points, correct, answered, accuracy, reached, mid, p, w, u, n in found:
            if tag == COUNTS:
                counts = (int(points), int(correct))
                continue
            entry: Entry = (points, correct, answered, UserRef(Platform(p), w, u, n))
            if tag == TOP:
                top.append((-points, -correct, reached, mid, entry))
            elif tag == ACCURATE:
                accurate.append((-accuracy, -correct, reached, mid, entry))
            else:
                own = entry
        top.sort(key=lambda t: t[:4])  # a UNION keeps no order
        accurate.sort(key=lambda t: t[:4])
        rows, players, mine = place_board([t[4] for t in top], own, caller, limit, counts)
        best = tuple(LeaderboardRow(i + 1, t[4][3], *t[4][:3]) for i, t in enumerate(accurate))
        return rows, players, mine, best


__all__ = ["SeasonBoardReader"]
