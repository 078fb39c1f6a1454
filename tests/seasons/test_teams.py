"""Teams: one team per member per workspace, names checked, the fair team board (both
scores, the workspace's rule), balanced teams accepted once by an admin."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select

from bot.admin import EVERYONE, NOBODY
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import ChannelRef, Platform, UserRef
from bot.features import Quiz
from bot.interactions import Click
from bot.messages import Button
from bot.scheduling import Scheduler
from bot.teams import ACCEPT, balance, spread
from storage.models import TeamMemberRow, TeamRow
from storage.store import SqlStore
from tests.boards.conftest import play
from tests.conftest import user
from tests.fakes import RecordingChat
from tests.quiz import quiz_of, service_of
from tests.seasons.conftest import LEAGUE, T0, say, text_of

C1 = ChannelRef(Platform.SLACK, "T1", "C1")
ANN, BOB, CAT, DAN, EVE = (user(n) for n in ("ann", "bob", "cat", "dan", "eve"))


async def _count(store: SqlStore, model: type) -> int:
    async with store.sessions() as s:
        return (await s.execute(select(func.count()).select_from(model))).scalar_one()


async def test_members_make_join_and_leave_teams_one_each(league: Quiz, store: SqlStore) -> None:
    assert "Team Owls is made" in (await say(league, C1, ANN, "team create Owls")).body
    await say(league, C1, ANN, "team create Foxes")
    refusals = [
        ("team create owls", "already a team called"),
        ("team create " + "x" * 33, "1 to 32 characters"),
        ("team create <@U1>", "without < > @"),
        ("team join Badgers", "no team called"),
        ("team join Foxes <@UBOB|bob>", "admin"),
        ("team rule per-member", "admin"),
        ("team balance 2", "admin"),
    ]
    assert "ann joined team Owls" in (await say(league, C1, ANN, "team join owls")).body
    refusals.append(("team join Foxes", "on team Owls already"))
    for text, words in refusals:
        assert words in (await say(league, C1, ANN, text)).body, text
    assert await _count(store, TeamRow) == 2 and await _count(store, TeamMemberRow) == 1
    assigned = await say(league, C1, ANN, "team join Foxes <@UBOB|bob>", admin=True)
    assert "bob joined team Foxes" in assigned.body
    listed = text_of(await say(league, C1, BOB, "team list"))
    assert "*Foxes* · 1 member" in listed and "Your team: Foxes" in listed
    assert "You left team Owls" in (await say(league, C1, ANN, "team leave")).body
    assert "not on a team" in (await say(league, C1, ANN, "team leave")).body
    assert await _count(store, TeamMemberRow) == 1


async def test_the_team_board_ranks_by_the_workspaces_fair_rule(
    league: Quiz, clock: FakeClock
) -> None:
    await say(league, C1, ANN, "team create Big")
    await say(league, C1, ANN, "team create Small")
    for who in (ANN, BOB, CAT, DAN):
        await say(league, C1, who, "team join Big")
    await say(league, C1, EVE, "team join Small")
    # Big: four members, three score once; Small: one member scores twice.
    await play(league.service, C1, {ANN: True, BOB: True, CAT: True, DAN: False, EVE: True})
    await play(league.service, C1, {EVE: True})
    board = text_of(await say(league, C1, ANN, "team board"))
    big = "Big — top 3: 30 pts · per active member: 7.5 pts (4 of 4 active)"
    small = "Small — top 3: 21 pts · per active member: 21.0 pts (1 of 1 active)"
    assert board.index(big) < board.index(small) and "ranked by the top 3" in board
    changed = await say(league, C1, ANN, "team rule per-member", admin=True)
    assert "per active member" in changed.body
    board = text_of(await say(league, C1, ANN, "team board week"))
    assert board.index(small) < board.index(big) and "ranked per active member" in board
    clock.advance(timedelta(days=1))
    today = text_of(await say(league, C1, ANN, "team board day"))
    assert "top 3: 0 pts" in today and "(0 of 4 active)" in today
    await say(league, C1, ANN, "season start Cup 2", admin=True)
    await play(league.service, C1, {DAN: True})
    season = text_of(await say(league, C1, ANN, "team board season"))
    assert "Team board · season Cup" in season
    assert "Big — top 3: 10 pts · per active member: 10.0 pts (1 of 4 active)" in season
    assert "unknown team board" in (await say(league, C1, ANN, "team board year")).body.lower()


def test_balance_puts_each_strongest_on_the_weakest_team() -> None:
    players = [(user(n), p) for n, p in [("a", 90), ("b", 60), ("c", 50), ("d", 40), ("e", 10)]]
    teams = balance(players, 2)
    assert [[u.user for u, _ in t] for t in teams] == [["UA", "UD"], ["UB", "UC", "UE"]]
    assert spread(teams) == 130 - 120


async def test_an_admin_accepts_balanced_teams_once(league: Quiz, store: SqlStore) -> None:
    await play(league.service, C1, {ANN: True, BOB: True, CAT: True, DAN: False})
    await play(league.service, C1, {ANN: True, BOB: False})
    proposal = await say(league, C1, ANN, "team balance 2", admin=True)
    # ann 21 points; bob, cat 10; dan 0: ann | bob, cat, dan.
    assert "*1.* 21 pts: ann" in proposal.body and "*2.* 20 pts: bob, cat, dan" in proposal.body
    assert "Spread (strongest less weakest): 1 pts" in proposal.body
    (button,) = proposal.buttons
    kind, post, value = Button.decode(button.encode())
    assert kind == ACCEPT

    def click(admin: bool) -> Click:
        return Click(ACCEPT, post, value, ANN, C1, admin=EVERYONE if admin else NOBODY)

    refused = await league.interactions.click(click(False))
    assert "admin" in refused.body.lower() and await _count(store, TeamMemberRow) == 0
    done = await league.interactions.click(click(True))
    assert "*Team 1* · 1 member" in done.body and "*Team 2* · 3 members" in done.body
    again = await league.interactions.click(click(True))
    assert "accepted already" in again.body
    assert await _count(store, TeamMemberRow) == 4
    too_many = await say(league, C1, ANN, "team balance 9", admin=True)
    assert "too few for 9 teams" in too_many.body


async def test_boards_and_stats_name_the_members_season_and_team(league: Quiz) -> None:
    await say(league, C1, ANN, "season start Cup 2", admin=True)
    await say(league, C1, ANN, "team create Owls")
    await say(league, C1, ANN, "team join Owls")
    await play(league.service, C1, {ANN: True, BOB: False})
    board = await say(league, C1, ANN, "leaderboard")
    assert "Season Cup: you are 1 of 2 (/quiz season board)" in board.footer
    assert "Your team: Owls (/quiz team board)" in board.footer
    stats = await say(league, C1, BOB, "stats")
    assert "Season Cup: you are 2 of 2" in stats.body and "Your team" not in stats.body


class GroupChat(RecordingChat):
    """A recording chat that reads platform groups (`bot.teams.GroupDirectory`)."""

    def __init__(self) -> None:
        super().__init__()
        self.groups: dict[str, list[UserRef]] = {}

    async def group_members(self, workspace: str, group: str) -> list[UserRef] | None:
        return self.groups.get(group)


async def test_a_linked_team_follows_its_group_and_is_refreshed(
    store: SqlStore, bank: QuestionBank, clock: FakeClock
) -> None:
    clock.set(T0)
    chat = GroupChat()
    chat.groups["S0ENG"] = [ANN, BOB]
    async with quiz_of(store, {Platform.SLACK: chat}, bank, clock, features=LEAGUE) as quiz:
        scheduler = service_of(quiz, Scheduler)
        await say(quiz, C1, ANN, "team create Eng")
        await say(quiz, C1, ANN, "team create Ops")
        await say(quiz, C1, BOB, "team join Ops")
        assert "admin" in (await say(quiz, C1, ANN, "team link Eng <!subteam^S0ENG|@eng>")).body
        unreadable = await say(quiz, C1, ANN, "team link Eng <!subteam^S0NOPE>", admin=True)
        assert "cannot read the members" in unreadable.body
        assert await store.leagues.linked() == []
        linked = await say(quiz, C1, ANN, "team link Eng <!subteam^S0ENG|@eng>", admin=True)
        assert "Team Eng follows <!subteam^S0ENG|@eng> now (2 members" in linked.body
        assert "On another team already (one team per member): bob" in linked.body
        assert await store.leagues.team_of(ANN) == "Eng"
        assert await store.leagues.team_of(BOB) == "Ops"
        # The group changes: the next refresh (every 15 minutes) follows it.
        chat.groups["S0ENG"] = [CAT, DAN]
        clock.advance(timedelta(minutes=5))
        await scheduler.tick()
        assert await store.leagues.team_of(ANN) == "Eng"
        clock.advance(timedelta(minutes=15))
        await scheduler.tick()
        assert await store.leagues.team_of(ANN) is None
        assert await store.leagues.team_of(CAT) == await store.leagues.team_of(DAN) == "Eng"
        # A group that cannot be read any more leaves the team as it was.
        del chat.groups["S0ENG"]
        clock.advance(timedelta(minutes=15))
        await scheduler.tick()
        assert await store.leagues.team_of(CAT) == "Eng"


async def test_a_platform_without_groups_says_so(league: Quiz) -> None:
    await say(league, C1, ANN, "team create Eng")
    said = await say(league, C1, ANN, "team link Eng <@&123456789>", admin=True)
    assert "no groups a team could follow" in said.body
    assert (
        "Name the team and the group"
        in (await say(league, C1, ANN, "team link Eng", admin=True)).body
    )


async def test_the_admin_report_names_the_running_season_and_the_teams(
    store: SqlStore, chat: RecordingChat, bank: QuestionBank, clock: FakeClock
) -> None:
    from bot import report

    clock.set(T0)
    chats = {Platform.SLACK: chat}
    async with quiz_of(store, chats, bank, clock, features=[*LEAGUE, report.feature]) as q:
        await play(q.service, C1, {ANN: True})
        plain = text_of(await say(q, C1, ANN, "report", admin=True))
        await say(q, C1, ANN, "team create Big")
        await say(q, C1, ANN, "team create Small")
        for who in (ANN, BOB):
            await say(q, C1, who, "team join Big")
        await say(q, C1, EVE, "team join Small")
        await say(q, C1, ANN, "season start Cup 2", admin=True)
        await play(q.service, C1, {ANN: True, BOB: True, EVE: False})
        after = text_of(await say(q, C1, ANN, "report", admin=True))
    assert "Season" not in plain and "Teams (" not in plain
    assert "Season Cup (2027-01-04 – 2027-01-17): 3 players; leader " in after
    # All time: Big is ann (10, then 11 on a streak of two) and bob (10); Small: eve, 0.
    assert "Teams (the points of their 3 best members): Big 31 · Small 0" in after, after
