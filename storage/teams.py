"""Team leagues: teams, memberships (one team per member: the primary key), the workspace's
rule, balance proposals (accepted once: a conditional update). Team boards are summed
from the boards' aggregates — the workspace board of a window (`score_periods`) or a
season's (`season_scores`) — joined with the memberships, ranked in SQL with one window
function (on PostgreSQL a LATERAL probe per member); never from the answers."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import and_, bindparam, case, delete, func, select, true, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.domain import BoardPeriod, BoardWindow, Platform, UserRef
from bot.team import Workspace
from bot.teams import (
    AlreadyOnTeam,
    NoSuchTeam,
    Synced,
    Team,
    TeamNameTaken,
    TeamRule,
    TeamScore,
)
from storage._sql import RefRepository, insert
from storage.members import TOMBSTONE
from storage.models import (
    LeagueRow,
    MemberRow,
    ScorePeriodRow,
    SeasonScoreRow,
    TeamMemberRow,
    TeamProposalRow,
    TeamRow,
)
from storage.refs import RefResolver, is_member
from storage.score_fold import ALL_TIME, workspace_board

_FORGOTTEN = TOMBSTONE.split("{", 1)[0]


def _key(name: str) -> str:
    return name.casefold()[:32]


class SqlTeamRepository(RefRepository):
    def __init__(self, sessions: async_sessionmaker[AsyncSession], refs: RefResolver) -> None:
        super().__init__(sessions, refs)
        self._standings: dict[str, Any] = {}  # statements, by source

    async def _member(self, s: AsyncSession, user: UserRef, create: bool) -> int | None:
        found = (
            await s.execute(
                select(MemberRow.id).where(
                    *is_member(user),
                )
            )
        ).scalar_one_or_none()
        if found is not None or not create:
            return found
        return (await self._refs.member_ids(s, [user]))[user.key]

    async def _team(self, s: AsyncSession, ws: Workspace, name: str) -> TeamRow | None:
        return (
            await s.execute(
                select(TeamRow).where(
                    TeamRow.platform == str(ws.platform),
                    TeamRow.workspace == ws.id,
                    TeamRow.name_key == _key(name),
                )
            )
        ).scalar_one_or_none()

    async def create(self, ws: Workspace, name: str, now: datetime) -> Team:
        try:
            async with self._sessions.begin() as s:
                if await self._team(s, ws, name) is not None:
                    raise TeamNameTaken(name)
                row = await _new_team(s, ws, name, now)
                return Team(row.id, row.name, 0)
        except IntegrityError:  # another replica made it meanwhile
            raise TeamNameTaken(name) from None

    async def join(self, user: UserRef, name: str, now: datetime) -> Team:
        ws = Workspace.of(user)
        try:
            async with self._sessions.begin() as s:
                team = await self._team(s, ws, name)
                if team is None:
                    raise NoSuchTeam(name)
                mid = await self._member(s, user, create=True)
                current = await self._team_of(s, mid)
                if current is not None:
                    raise AlreadyOnTeam(current)
                s.add(TeamMemberRow(member_id=mid, team_id=team.id, joined_at=now))
                await s.flush()
                count = await self._count(s, team.id)
                return Team(team.id, team.name, count)
        except IntegrityError:  # joined another team meanwhile
            async with self._sessions() as s:
                mid = await self._member(s, user, create=False)
                raise AlreadyOnTeam(await self._team_of(s, mid) or name) from None

    async def _team_of(self, s: AsyncSession, mid: int | None) -> str | None:
        if mid is None:
            return None
        return (
            await s.execute(
                select(TeamRow.name)
                .join(TeamMemberRow, TeamMemberRow.team_id == TeamRow.id)
                .where(TeamMemberRow.member_id == mid)
            )
        ).scalar_one_or_none()

    async def _count(self, s: AsyncSession, team_id: int) -> int:
        return (
            await s.execute(
                select(func.count())
                .select_from(TeamMemberRow)
                .where(TeamMemberRow.team_id == team_id)
            )
        ).scalar_one()

    async def leave(self, user: UserRef) -> str | None:
        async with self._sessions.begin() as s:
            mid = await self._member(s, user, create=False)
            name = await self._team_of(s, mid)
            if name is not None:
                await s.execute(delete(TeamMemberRow).where(TeamMemberRow.member_id == mid))
            return name

    async def team_of(self, user: UserRef) -> str | None:
        async with self._sessions() as s:
            return await self._team_of(s, await self._member(s, user, create=False))

    async def teams_of(self, users: Sequence[UserRef]) -> dict[str, str]:
        """`team_of` of many members of one workspace: their team's name by member key
        (none: absent), read in one statement."""
        if not users:
            return {}
        first = users[0]
        async with self._sessions() as s:
            rows = await s.execute(
                select(MemberRow.user_id, TeamRow.name)
                .join(TeamMemberRow, TeamMemberRow.member_id == MemberRow.id)
                .join(TeamRow, TeamRow.id == TeamMemberRow.team_id)
                .where(
                    MemberRow.platform == str(first.platform),
                    MemberRow.workspace == first.workspace,
                    MemberRow.user_id.in_(sorted({u.user for u in users})),
                )
            )
            return {UserRef(first.platform, first.workspace, uid).key: name for uid, name in rows}

    async def teams(self, ws: Workspace) -> list[Team]:
        async with self._sessions() as s:
            rows = await s.execute(
                select(TeamRow.id, TeamRow.name, func.count(TeamMemberRow.member_id))
                .outerjoin(TeamMemberRow, TeamMemberRow.team_id == TeamRow.id)
                .where(TeamRow.platform == str(ws.platform), TeamRow.workspace == ws.id)
                .group_by(TeamRow.id, TeamRow.name)
                .order_by(TeamRow.name_key)
            )
            return [Team(tid, name, n) for tid, name, n in rows]

    async def rule(self, ws: Workspace) -> TeamRule:
        async with self._sessions() as s:
            found = (
                await s.execute(
                    select(LeagueRow.rule).where(
                        LeagueRow.platform == str(ws.platform), LeagueRow.workspace == ws.id
                    )
                )
            ).scalar_one_or_none()
        return TeamRule(found) if found else TeamRule.TOP3

    async def set_rule(self, ws: Workspace, rule: TeamRule) -> None:
        async with self._sessions.begin() as s:
            ins = insert(self._dialect, LeagueRow).values(
                platform=str(ws.platform), workspace=ws.id, rule=rule.value
            )
            await s.execute(
                ins.on_conflict_do_update(
                    index_elements=["platform", "workspace"], set_={"rule": ins.excluded.rule}
                )
            )

    async def standings(
        self, ws: Workspace, period: BoardPeriod | None = None, season_id: int | None = None
    ) -> list[TeamScore]:
        """One statement: the board's rows of the teams' members, numbered per team by
        points (a window function), summed per team. Built once per source (a season, a
        window) and bound per call."""
        params: dict[str, Any] = {"platform": str(ws.platform), "workspace": ws.id}
        if season_id is not None:
            source = "season"
            params["season"] = season_id
        else:
            source = "period"
            period = period or BoardPeriod(BoardWindow.ALL)
            params["board"] = workspace_board(str(ws.platform), ws.id, period.window)
            params["starts"] = ALL_TIME if period.window is BoardWindow.ALL else period.first
        stmt = self._standings.get(source)
        if stmt is None:
            stmt = self._standings[source] = self._standings_statement(source)
        async with self._sessions() as s:
            rows = await s.execute(stmt, params)
            return [
                TeamScore(name, n, active, top3, total) for name, n, active, top3, total in rows
            ]

    def _standings_statement(self, source: str) -> Any:
        tm = TeamMemberRow
        # Each team member's row of the board: a primary-key lookup per member.
        src: Any
        if source == "season":
            src = SeasonScoreRow
            on = and_(
                src.season_id == bindparam("season"), src.board == 0, src.member_id == tm.member_id
            )
        else:
            src = ScorePeriodRow
            on = and_(
                src.board == bindparam("board"),
                src.starts == bindparam("starts"),
                src.member_id == tm.member_id,
            )
        # PostgreSQL's planner misjudges a board's size and would hash-join all of it:
        # a LATERAL lookup keeps it to one index probe per member. SQLite (no LATERAL)
        # already loops over the members.
        row: Any = src
        target: Any = src
        if self._dialect == "postgresql":
            # LIMIT 1 (one row by the primary key anyway) keeps it from being flattened.
            row = target = select(src.points, src.answered).where(on).limit(1).lateral("looked")
            on = true()
        points = func.coalesce(row.points if row is src else row.c.points, 0)
        answered = func.coalesce(row.answered if row is src else row.c.answered, 0)
        place = (
            func.row_number()
            .over(partition_by=tm.team_id, order_by=(points.desc(), tm.member_id))
            .label("place")
        )
        mine = and_(
            TeamRow.platform == bindparam("platform"), TeamRow.workspace == bindparam("workspace")
        )
        members = (
            select(tm.team_id, points.label("points"), answered.label("answered"), place)
            .select_from(tm)
            .join(TeamRow, TeamRow.id == tm.team_id)
            .outerjoin(target, on)
            .where(mine)
            .subquery()
        )
        m = members.c
        return (
            select(
                TeamRow.name,
                func.count(m.team_id),
                func.coalesce(func.sum(case((m.answered > 0, 1), else_=0)), 0),
                func.coalesce(func.sum(case((m.place <= 3, m.points), else_=0)), 0),
                func.coalesce(func.sum(m.points), 0),
            )
            .outerjoin(members, m.team_id == TeamRow.id)
            .where(mine)
            .group_by(TeamRow.id, TeamRow.name)
        )

    async def recent(self, ws: Workspace, since: date) -> list[tuple[UserRef, int]]:
        p, mem = ScorePeriodRow, MemberRow
        board = workspace_board(str(ws.platform), ws.id, BoardWindow.DAY)
        async with self._sessions() as s:
            played = dict(
                (
                    await s.execute(
                        select(p.member_id, func.sum(p.points))
                        .where(p.board == board, p.starts >= since)
                        .group_by(p.member_id)
                    )
                ).all()
            )
            on_teams = (
                await s.execute(
                    select(TeamMemberRow.member_id)
                    .join(TeamRow, TeamRow.id == TeamMemberRow.team_id)
                    .where(TeamRow.platform == str(ws.platform), TeamRow.workspace == ws.id)
                )
            ).scalars()
            ids = set(played) | set(on_teams)
            found = await s.execute(
                select(mem.id, mem.platform, mem.workspace, mem.user_id, mem.display_name).where(
                    mem.id.in_(sorted(ids)), mem.user_id.not_like(f"{_FORGOTTEN}%")
                )
            )
            return [
                (UserRef(Platform(pf), w, uid, name), int(played.get(mid, 0) or 0))
                for mid, pf, w, uid, name in found
            ]

    async def propose(
        self, ws: Workspace, teams: Sequence[Sequence[UserRef]], now: datetime
    ) -> int:
        async with self._sessions.begin() as s:
            ids = await self._refs.member_ids(s, [u for team in teams for u in team])
            row = TeamProposalRow(
                platform=str(ws.platform),
                workspace=ws.id,
                teams=json.dumps([[ids[u.key] for u in team] for team in teams]),
                created_at=now,
            )
            s.add(row)
            await s.flush()
            return row.id

    async def accept(self, ws: Workspace, proposal: int, now: datetime) -> list[Team] | None:
        async with self._sessions.begin() as s:
            taken = (
                await s.execute(
                    update(TeamProposalRow)
                    .where(
                        TeamProposalRow.id == proposal,
                        TeamProposalRow.platform == str(ws.platform),
                        TeamProposalRow.workspace == ws.id,
                        TeamProposalRow.accepted_at.is_(None),
                    )
                    .values(accepted_at=now)
                    .returning(TeamProposalRow.teams)
                )
            ).scalar_one_or_none()
            if taken is None:
                return None
            proposed: list[list[int]] = json.loads(taken)
            existing = (
                (
                    await s.execute(
                        select(TeamRow)
                        .where(TeamRow.platform == str(ws.platform), TeamRow.workspace == ws.id)
                        .order_by(TeamRow.name_key)
                    )
                )
                .scalars()
                .all()
            )
            targets = list(existing)
            if len(targets) != len(proposed):
                targets = []
                for i in range(len(proposed)):
                    name = f"Team {i + 1}"
                    row = await self._team(s, ws, name)
                    targets.append(row or await _new_team(s, ws, name, now))
            alive = set(
                (
                    await s.execute(
                        select(MemberRow.id).where(
                            MemberRow.id.in_(sorted({m for team in proposed for m in team})),
                            MemberRow.user_id.not_like(f"{_FORGOTTEN}%"),
                        )
                    )
                ).scalars()
            )
            everyone = sorted(alive)
            await s.execute(delete(TeamMemberRow).where(TeamMemberRow.member_id.in_(everyone)))
            rows = [
                {"member_id": mid, "team_id": team.id, "joined_at": now}
                for team, members in zip(targets, proposed, strict=True)
                for mid in members
                if mid in alive
            ]
            if rows:
                await s.execute(insert(self._dialect, TeamMemberRow), rows)
            return [Team(t.id, t.name, await self._count(s, t.id)) for t in targets]

    async def link(self, ws: Workspace, name: str, group: str) -> Team:
        async with self._sessions.begin() as s:
            team = await self._team(s, ws, name)
            if team is None:
                raise NoSuchTeam(name)
            team.link = group[:64]
            return Team(team.id, team.name, await self._count(s, team.id))

    async def linked(self) -> list[tuple[Workspace, str, str]]:
        async with self._sessions() as s:
            rows = await s.execute(
                select(TeamRow.platform, TeamRow.workspace, TeamRow.name, TeamRow.link)
                .where(TeamRow.link.is_not(None))
                .order_by(TeamRow.id)
            )
            return [(Workspace(Platform(p), w), name, link or "") for p, w, name, link in rows]

    async def sync(
        self, ws: Workspace, name: str, members: Sequence[UserRef], now: datetime
    ) -> Synced:
        """The team's members become the group's: those gone leave, those on no team
        join; those on another team stay there (one team per member)."""
        wanted = {u.user: u for u in members if Workspace.of(u) == ws}
        async with self._sessions.begin() as s:
            team = await self._team(s, ws, name)
            if team is None:
                raise NoSuchTeam(name)
            known = dict(
                (
                    await s.execute(
                        select(MemberRow.user_id, MemberRow.id).where(
                            MemberRow.platform == str(ws.platform),
                            MemberRow.workspace == ws.id,
                            MemberRow.user_id.in_(sorted(wanted)),
                        )
                    )
                ).all()
            )
            missing = [u for uid, u in sorted(wanted.items()) if uid not in known]
            if missing:
                made = await self._refs.member_ids(s, missing)
                known.update({u.user: made[u.key] for u in missing})
            ids = {mid: uid for uid, mid in known.items()}
            teams_of = dict(
                (
                    await s.execute(
                        select(TeamMemberRow.member_id, TeamMemberRow.team_id).where(
                            TeamMemberRow.member_id.in_(sorted(ids))
                        )
                    )
                ).all()
            )
            current = dict(
                (
                    await s.execute(
                        select(TeamMemberRow.member_id, MemberRow.display_name)
                        .join(MemberRow, MemberRow.id == TeamMemberRow.member_id)
                        .where(TeamMemberRow.team_id == team.id)
                    )
                ).all()
            )
            gone = sorted(mid for mid in current if mid not in ids)
            if gone:
                await s.execute(delete(TeamMemberRow).where(TeamMemberRow.member_id.in_(gone)))
            joining = sorted(mid for mid in ids if mid not in teams_of)
            if joining:
                await s.execute(
                    insert(self._dialect, TeamMemberRow).on_conflict_do_nothing(),
                    [{"member_id": m, "team_id": team.id, "joined_at": now} for m in joining],
                )
            return Synced(
                joined=tuple(wanted[ids[m]].display or ids[m] for m in joining),
                left=tuple(current[m] for m in gone),
                elsewhere=tuple(
                    wanted[ids[m]].display or ids[m]
                    for m, t in sorted(teams_of.items())
                    if t != team.id
                ),
            )


async def _new_team(s: AsyncSession, ws: Workspace, name: str, now: datetime) -> TeamRow:
    row = TeamRow(
        platform=str(ws.platform), workspace=ws.id, name=name, name_key=_key(name), created_at=now
    )
    s.add(row)
    await s.flush()
    return row


__all__ = ["SqlTeamRepository"]
