"""The team boards' aggregate (`team_scores`): after every change of a team's members —
a join, a leave, an accepted proposal, a group's sync, an erasure — and after every close,
each team board (all time, this week, today, the season) equals a recomputation from
the members' own board rows."""

from __future__ import annotations

from datetime import timedelta

from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import delete, select
from sqlalchemy.engine import Connection

from bot.clock import FakeClock
from bot.domain import BoardWindow, ChannelRef, Platform
from bot.features import Quiz
from bot.scoring import board_period
from bot.team import Workspace
from bot.teams import TeamRule, TeamScore
from storage.board_keys import ALL_TIME, workspace_board
from storage.engine import alembic_config
from storage.models import ScorePeriodRow, SeasonScoreRow, TeamMemberRow, TeamRow, TeamScoreRow
from storage.store import SqlStore
from tests.boards.conftest import play
from tests.conftest import user
from tests.seasons.conftest import say

C1 = ChannelRef(Platform.SLACK, "T1", "C1")
WS = Workspace(Platform.SLACK, "T1")
ANN, BOB, CAT, DAN, EVE = (user(n) for n in ("ann", "bob", "cat", "dan", "eve"))


async def _recomputed(
    store: SqlStore, board: str, starts: object, season: int | None
) -> list[TeamScore]:
    async with store.sessions() as s:
        teams = dict(
            (
                await s.execute(
                    select(TeamRow.id, TeamRow.name).where(
                        TeamRow.platform == str(WS.platform), TeamRow.workspace == WS.id
                    )
                )
            ).all()
        )
        on_team = (
            await s.execute(
                select(TeamMemberRow.team_id, TeamMemberRow.member_id).where(
                    TeamMemberRow.team_id.in_(list(teams))
                )
            )
        ).all()
        if season is None:
            source = select(ScorePeriodRow.member_id, ScorePeriodRow.points).where(
                ScorePeriodRow.board == board, ScorePeriodRow.starts == starts
            )
        else:
            source = select(SeasonScoreRow.member_id, SeasonScoreRow.points).where(
                SeasonScoreRow.season_id == season, SeasonScoreRow.board == 0
            )
        points = dict((await s.execute(source)).all())
    out = []
    for tid, name in teams.items():
        mine = [points[m] for t, m in on_team if t == tid and m in points]
        best = sorted(mine, reverse=True)
        count = sum(1 for t, _ in on_team if t == tid)
        out.append(TeamScore(name, count, len(mine), sum(best[:3]), sum(mine)))
    return sorted(out, key=lambda t: t.name)


async def check_team_boards(store: SqlStore, clock: FakeClock, channel: ChannelRef = C1) -> None:
    """Every team board equals its recomputation (the season: `channel`'s)."""
    season = await store.seasons.current(channel, clock.now())
    assert season is not None
    for window in (BoardWindow.ALL, BoardWindow.WEEK, BoardWindow.DAY):
        period = board_period(window, clock.now(), "UTC")
        got = (await store.leagues.standings(WS, period=period)).scores
        starts = ALL_TIME if window is BoardWindow.ALL else period.first
        board = workspace_board(str(WS.platform), WS.id, window)
        assert sorted(got, key=lambda t: t.name) == await _recomputed(store, board, starts, None)
    got = (await store.leagues.standings(WS, season_id=season.id)).scores
    assert sorted(got, key=lambda t: t.name) == await _recomputed(store, "", None, season.id)


async def test_team_boards_follow_every_change_of_members(
    league: Quiz, store: SqlStore, clock: FakeClock
) -> None:
    service = league.service
    await say(league, C1, ANN, "season start Cup 4", admin=True)
    # Points first, teams after: a team gains its members' earlier points.
    await play(service, C1, {ANN: True, BOB: True, CAT: False, DAN: True, EVE: True})
    clock.advance(timedelta(days=1))
    await play(service, C1, {ANN: True, BOB: False, CAT: True, DAN: True})
    for name in ("Owls", "Foxes"):
        await say(league, C1, ANN, f"team create {name}")
    for who, team in ((ANN, "Owls"), (BOB, "Owls"), (CAT, "Foxes"), (DAN, "Owls")):
        await say(league, C1, who, f"team join {team}")
    await check_team_boards(store, clock)
    owls = {t.name: t for t in (await store.leagues.standings(WS)).scores}["Owls"]
    assert owls.members == 3 and owls.top3 > 0  # the check above is not of empty boards
    await play(service, C1, {ANN: True, CAT: True, EVE: True})  # a close keeps them
    await check_team_boards(store, clock)
    await say(league, C1, BOB, "team leave")
    await check_team_boards(store, clock)
    await store.leagues.sync(WS, "Foxes", [CAT, EVE, BOB], clock.now())
    await check_team_boards(store, clock)
    assert {t.name: t.members for t in (await store.leagues.standings(WS)).scores} == {
        "Owls": 2,
        "Foxes": 3,
    }
    await store.members.forget(ANN)
    await check_team_boards(store, clock)
    proposal = await store.leagues.propose(WS, [[DAN, EVE], [BOB, CAT]], clock.now())
    assert await store.leagues.accept(WS, proposal, clock.now()) is not None
    await check_team_boards(store, clock)
    clock.advance(timedelta(days=8))  # a new week: the team boards start from nothing
    await play(service, C1, {DAN: True, BOB: True})
    await check_team_boards(store, clock)
    week = (
        await store.leagues.standings(WS, period=board_period(BoardWindow.WEEK, clock.now(), "UTC"))
    ).scores
    assert sorted(t.top3 for t in week) == [10, 10]


async def test_the_migration_fills_what_the_closes_and_joins_keep(
    league: Quiz, store: SqlStore, clock: FakeClock
) -> None:
    """Revision 0015 fills `team_scores` from the members' rows as `storage.team_fold`
    keeps it: every period and season of each workspace with teams."""
    service = league.service
    await say(league, C1, ANN, "season start Cup 4", admin=True)
    await play(service, C1, {ANN: True, BOB: True, CAT: False, DAN: True})
    for name, who in (("Owls", (ANN, BOB)), ("Foxes", (CAT, DAN))):
        await say(league, C1, ANN, f"team create {name}")
        for member in who:
            await say(league, C1, member, f"team join {name}")
    for day in range(1, 9):
        clock.advance(timedelta(days=1))
        await play(service, C1, {ANN: day % 2 == 0, CAT: True, EVE: day % 3 == 0})
    kept = await _rows(store)
    assert len({board for _, board, _ in kept}) >= 4  # periods of every window and a season
    async with store.sessions.begin() as s:
        await s.execute(delete(TeamScoreRow))
    migration = ScriptDirectory.from_config(alembic_config()).get_revision("0015")
    assert migration is not None and migration.module is not None

    def backfill(conn: Connection) -> None:
        with Operations.context(MigrationContext.configure(conn)):
            migration.module._backfill()

    async with store.engine.begin() as conn:
        await conn.run_sync(backfill)
    assert await _rows(store) == kept


async def _rows(store: SqlStore) -> dict[tuple[int, str, object], tuple[int, int, int]]:
    async with store.sessions() as s:
        return {
            (r.team_id, r.board, r.starts): (r.active, r.top3, r.points)
            for r in (await s.execute(select(TeamScoreRow))).scalars()
        }


async def test_a_team_of_many_members_is_summed_the_same(
    league: Quiz, store: SqlStore, clock: FakeClock
) -> None:
    """Over 100 members (PostgreSQL then scans the boards instead of probing each
    member's row): the same sums."""
    service = league.service
    crowd = [user(f"m{i:03}") for i in range(130)]
    await say(league, C1, ANN, "season start Cup 4", admin=True)
    await play(service, C1, {who: i % 3 != 0 for i, who in enumerate(crowd[:40])})
    await say(league, C1, ANN, "team create Crowd")
    await say(league, C1, ANN, "team create Owls")
    await store.leagues.sync(WS, "Crowd", crowd[:120], clock.now())
    await say(league, C1, crowd[125], "team join Owls")
    await check_team_boards(store, clock)
    clock.advance(timedelta(hours=2))
    await play(service, C1, {who: i % 2 == 0 for i, who in enumerate(crowd[20:126])})
    await check_team_boards(store, clock)
    by_name = {t.name: t for t in (await store.leagues.standings(WS)).scores}
    assert by_name["Crowd"].members == 120 and by_name["Crowd"].active == 120
    assert by_name["Owls"].active == 1


async def test_the_board_carries_the_workspace_rule(store: SqlStore, clock: FakeClock) -> None:
    """The standings read the workspace's rule in the same statement, with or without
    teams, and another workspace's rule never leaks in."""
    assert (await store.leagues.standings(WS)).rule is TeamRule.TOP3
    await store.leagues.set_rule(WS, TeamRule.PER_MEMBER)
    await store.leagues.set_rule(Workspace(Platform.SLACK, "T2"), TeamRule.TOP3)
    empty = await store.leagues.standings(WS)
    assert (empty.rule, empty.scores) == (TeamRule.PER_MEMBER, [])
    await store.leagues.create(WS, "Owls", clock.now())
    await store.leagues.join(ANN, "Owls", clock.now())
    board = await store.leagues.standings(WS)
    assert board.rule is TeamRule.PER_MEMBER
    assert [t.name for t in board.scores] == ["Owls"]
    await store.leagues.set_rule(WS, TeamRule.TOP3)
    assert (await store.leagues.standings(WS)).rule is TeamRule.TOP3
