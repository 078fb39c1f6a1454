"""Team leagues: teams, memberships (one team per member: the primary key), the workspace's
rule, balance proposals (accepted once: a conditional update). Team boards read one row
per team of `team_scores`, which the close keeps and every change of a team's members
recomputes (`storage.team_fold`); never the answers."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date, datetime

from sqlalchemy import Select, and_, delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from bot.domain import BoardPeriod, BoardWindow, Platform, UserRef
from bot.team import Workspace
from bot.teams import (
    AlreadyOnTeam,
    NoSuchTeam,
    Synced,
    Team,
    TeamBoard,
    TeamNameTaken,
    TeamRule,
    TeamScore,
)
from storage._sql import RefRepository, added_id, insert
from storage.board_keys import ALL_TIME, season_board, workspace_board
from storage.members import TOMBSTONE
from storage.models import (
    LeagueRow,
    MemberRow,
    ScorePeriodRow,
    TeamMemberRow,
    TeamProposalRow,
    TeamRow,
    TeamScoreRow,
)
from storage.refs import is_member
from storage.team_fold import rebuild, teams_of

_FORGOTTEN = TOMBSTONE.split("{", 1)[0]


def _key(name: str) -> str:
    return name.casefold()[:32]


class SqlTeamRepository(RefRepository):
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
                await rebuild(s, self._dialect, str(ws.platform), ws.id, [team.id])
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
            if name is not None and mid is not None:
                teams = await teams_of(s, [mid])
                await s.execute(delete(TeamMemberRow).where(TeamMemberRow.member_id == mid))
                await rebuild(s, self._dialect, str(user.platform), user.workspace, teams)
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

    @staticmethod
    def _rule_of(ws: Workspace) -> Select[str]:
        return select(LeagueRow.rule).where(
            LeagueRow.platform == str(ws.platform), LeagueRow.workspace == ws.id
        )

    async def rule(self, ws: Workspace) -> TeamRule:
        async with self._sessions() as s:
            found = (await s.execute(self._rule_of(ws))).scalar_one_or_none()
        return _rule(found)

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
    ) -> TeamBoard:
        """One statement over the teams, their rows of the board period in `team_scores`
        (kept by the close: `storage.team_fold`) and the workspace's rule."""
        if season_id is not None:
            board, starts = season_board(season_id), ALL_TIME
        else:
            period = period or BoardPeriod(BoardWindow.ALL)
            board = workspace_board(str(ws.platform), ws.id, period.window)
            all_time = period.window is BoardWindow.ALL
            starts = ALL_TIME if all_time or period.first is None else period.first
        t = TeamScoreRow
        members = (
            select(func.count())
            .select_from(TeamMemberRow)
            .where(TeamMemberRow.team_id == TeamRow.id)
            .scalar_subquery()
        )
        async with self._sessions() as s:
            rows = (
                await s.execute(
                    select(
                        TeamRow.name,
                        members,
                        func.coalesce(t.active, 0),
                        func.coalesce(t.top3, 0),
                        func.coalesce(t.points, 0),
                        self._rule_of(ws).scalar_subquery(),
                    )
                    .outerjoin(
                        t, and_(t.team_id == TeamRow.id, t.board == board, t.starts == starts)
                    )
                    .where(TeamRow.platform == str(ws.platform), TeamRow.workspace == ws.id)
                )
            ).all()
        if not rows:
            return TeamBoard(await self.rule(ws), [])
        return TeamBoard(
            _rule(rows[0][5]),
            [TeamScore(name, n, active, top3, total) for name, n, active, top3, total, _ in rows],
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
            return await added_id(s, row)

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
            teams = {t.id for t in existing} | {t.id for t in targets}
            await rebuild(s, self._dialect, str(ws.platform), ws.id, teams)
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
            if gone or joining:
                await rebuild(s, self._dialect, str(ws.platform), ws.id, [team.id])
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


def _rule(found: str | None) -> TeamRule:
    """A workspace's stored rule; the default where it chose none."""
    return TeamRule(found) if found else TeamRule.TOP3


__all__ = ["SqlTeamRepository"]
