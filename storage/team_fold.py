"""The team boards' aggregate (`team_scores`): a team's members summed on one board
period, so a team board reads one row per team instead of a row per member.

A team's row of a period is its current members' rows on that board (the workspace's
`score_periods`, a season's `season_scores` board 0) summed: members with an answer, the
three best members' points, everyone's. It holds for every period a team member has a
row in, and is recomputed from those rows, never from the answers:
- by the close, for the teams of its answerers and the periods it added to;
- when a team's members change (join, leave, an accepted proposal, a group's sync, an
  erasure), for every period of the workspace (one statement for the boards' periods,
  one for the seasons).

On PostgreSQL the recomputation first locks the teams' rows (in id order): two closes of
one workspace, or a close and a join, recompute one after the other, the second seeing
what the first committed. SQLite serializes writers anyway.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import date
from typing import Any

from sqlalchemy import String, and_, case, cast, delete, func, literal, select, text, true
from sqlalchemy.ext.asyncio import AsyncSession

from bot.domain import BoardWindow
from storage._sql import insert
from storage.board_keys import ALL_TIME, workspace_board
from storage.models import (
    ScoreHistogramRow,
    ScorePeriodRow,
    SeasonRow,
    SeasonScoreRow,
    TeamMemberRow,
    TeamRow,
    TeamScoreRow,
)

Key = tuple[str, date]  # (board, starts)

_SEASON = "season:"
_COLUMNS = ["team_id", "board", "starts", "active", "top3", "points"]
# Up to this many members, PostgreSQL probes each member's row (LATERAL); beyond, a scan
# of the boards' periods joined by hash is cheaper (measured with 1,000 members in 50
# teams over 144 periods: probes 15 s, the scan 0.5 s; one team of 20: 65 ms against 0.4 s).
_PROBED_MEMBERS = 100


async def teams_of(s: AsyncSession, members: Iterable[int]) -> list[int]:
    """The teams the members are on."""
    ids = sorted(set(members))
    if not ids:
        return []
    found = await s.execute(
        select(TeamMemberRow.team_id).where(TeamMemberRow.member_id.in_(ids)).distinct()
    )
    return sorted(found.scalars())


async def refresh(
    s: AsyncSession, dialect: str, teams: Collection[int], keys: Collection[Key]
) -> None:
    """The teams' rows of `keys` (board periods), recomputed from their members' rows."""
    if not teams or not keys:
        return
    ids = sorted(set(teams))
    probe = await _lock(s, dialect, ids)
    t, tm = TeamScoreRow, TeamMemberRow
    for board, starts in sorted(set(keys)):
        await s.execute(delete(t).where(t.team_id.in_(ids), t.board == board, t.starts == starts))
        src: Any
        if board.startswith(_SEASON):
            src = SeasonScoreRow
            on = and_(src.season_id == int(board.split(":")[1]), src.board == 0)
        else:
            src = ScorePeriodRow
            on = and_(src.board == board, src.starts == starts)
        rows = select(tm.team_id, literal(board), literal(starts)).where(tm.team_id.in_(ids))
        await _insert_summed(s, dialect, rows, src, on, probe)


async def rebuild(
    s: AsyncSession, dialect: str, platform: str, workspace: str, teams: Collection[int]
) -> None:
    """After the teams' members changed: their rows of every period, recomputed (the
    workspace's periods are those its boards' histograms have)."""
    if not teams:
        return
    ids = sorted(set(teams))
    probe = await _lock(s, dialect, ids)
    if dialect == "postgresql":
        # The planner prices a probe per member and period high enough to compile the
        # query (JIT), which costs far more than the probes themselves.
        await s.execute(text("SET LOCAL jit = off"))
    t, h, tm, sp = TeamScoreRow, ScoreHistogramRow, TeamMemberRow, ScorePeriodRow
    await s.execute(delete(t).where(t.team_id.in_(ids)))
    names = [workspace_board(platform, workspace, w) for w in BoardWindow]
    keys = select(h.board, h.starts).where(h.board.in_(names)).distinct().subquery()
    periods = (
        select(tm.team_id, keys.c.board, keys.c.starts)
        .select_from(keys)
        .join(tm, true())
        .where(tm.team_id.in_(ids))
    )
    on = and_(sp.board == keys.c.board, sp.starts == keys.c.starts)
    await _insert_summed(s, dialect, periods, sp, on, probe)
    ss, se = SeasonScoreRow, SeasonRow
    board = literal(_SEASON) + cast(se.id, String) + literal(":0")
    seasons = (
        select(tm.team_id, board, literal(ALL_TIME))
        .select_from(se)
        .join(tm, true())
        .where(se.platform == platform, se.workspace == workspace, tm.team_id.in_(ids))
    )
    await _insert_summed(s, dialect, seasons, ss, and_(ss.season_id == se.id, ss.board == 0), probe)


async def _lock(s: AsyncSession, dialect: str, teams: list[int]) -> bool:
    """Lock the teams' rows (PostgreSQL); whether to probe their members' rows one by one
    (PostgreSQL, at most `_PROBED_MEMBERS` members)."""
    if dialect != "postgresql":
        return False
    await s.execute(
        select(TeamRow.id).where(TeamRow.id.in_(teams)).order_by(TeamRow.id).with_for_update()
    )
    members = await s.execute(
        select(func.count()).select_from(TeamMemberRow).where(TeamMemberRow.team_id.in_(teams))
    )
    return members.scalar_one() <= _PROBED_MEMBERS


async def _insert_summed(
    s: AsyncSession, dialect: str, head: Any, src: Any, on: Any, probe: bool
) -> None:
    """Insert into `team_scores` the sums of `head` (team, board, starts, over team
    members) joined with each member's row of `src` where `on`. For a few members,
    PostgreSQL's planner misjudges a board's size and would merge-join all of it: a
    LATERAL lookup (`probe`) keeps it to one index probe per member (LIMIT 1, one row by
    the key anyway, keeps it from being flattened). SQLite loops over the members."""
    tm = TeamMemberRow
    mine = and_(on, src.member_id == tm.member_id)
    if probe:
        row = select(src.points, src.answered).where(mine).limit(1).lateral("looked")
        rows = head.join(row, true()).add_columns(row.c.points, row.c.answered)
    else:
        rows = head.join(src, mine).add_columns(src.points, src.answered)
    t = TeamScoreRow
    await s.execute(insert(dialect, t).from_select(_COLUMNS, _summed(rows.subquery())))


def _summed(rows: Any) -> Any:
    """`rows` (team, board, starts, points, answered: a member's row on a board period)
    ranked within each team's period (a window function), summed per team and period:
    members with an answer, the three best, everyone."""
    team, board, starts, points, _ = rows.c
    place = func.row_number().over(partition_by=(team, board, starts), order_by=points.desc())
    r = select(*rows.c, place.label("place")).subquery().c
    return select(
        r[0],
        r[1],
        r[2],
        func.sum(case((r[4] > 0, 1), else_=0)),
        func.sum(case((r.place <= 3, r[3]), else_=0)),
        func.sum(r[3]),
    ).group_by(r[0], r[1], r[2])
