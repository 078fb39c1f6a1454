"""Seasons and teams on Slack, end to end (the adapter in HTTP mode on 127.0.0.1 against
the fake Slack): an admin starts a season, members of two teams answer, the scheduler's
pass ends the season on time and the podium is posted once."""

from __future__ import annotations

from datetime import timedelta

from bot import basics, scheduling, seasons, teams
from bot.clock import FakeClock
from bot.config import Settings
from bot.domain import Platform, UserRef
from bot.scheduling import Scheduler
from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.conftest import SlackWith
from tests.quiz import service_of
from tests.seasons.conftest import T0

LEAGUE = (basics.feature, scheduling.feature, seasons.feature, teams.feature)


async def test_a_season_of_two_teams_ends_on_time_with_one_podium_on_slack(
    slack_with: SlackWith, clock: FakeClock
) -> None:
    clock.set(T0)
    async with slack_with(*LEAGUE, settings=Settings(ask_cooldown=0)) as http:
        scheduler = service_of(http.quiz, Scheduler)

        async def run(text: str, user: str) -> None:
            status, _ = await http.command(text, user=user)
            assert status == 200
            await http.adapter.idle()

        await run("season start Cup 1", "U0ALICE")  # not an admin: refused, nothing stored
        assert any("admin" in t.lower() for t in http.private_to("U0ALICE"))
        await run("season start Cup 1", "U0ROOT")
        await run("team create Owls", "U0ALICE")
        await run("team create Foxes", "U0BOB")
        await run("team join Owls", "U0ALICE")
        await run("team join Foxes", "U0BOB")
        await run("team join Owls", "U0BOB")  # one team per member
        assert any("on team Foxes already" in t for t in http.private_to("U0BOB"))
        for _ in range(2):
            post = await http.ask()
            question = http.service.bank.get(post.question_id)
            assert question is not None
            wrong = (question.answer + 1) % question.choice_count
            for user, choice in (("U0ALICE", question.answer), ("U0BOB", wrong)):
                status, _ = await http.click(post.id, choice, user=user)
                assert status == 200
            await run("close", "U0ROOT")
        clock.set(T0 + timedelta(days=7))
        await scheduler.tick()
        await scheduler.tick()
        await http.adapter.idle()
        posted = [c.text for c in http.fake.calls_to("chat.postMessage")]
        podiums = [t for t in posted if "Season Cup is over" in t]
        assert len(podiums) == 1
        assert "🥇 alice — 20 pts (2/2 correct)" in podiums[0]
        assert "2. bob — 0 pts (0/2 correct)" in podiums[0]
        await run("team board", "U0BOB")
        (board,) = [
            c.text for c in http.fake.calls_to("chat.postMessage") if "Team board" in c.text
        ]
        assert "Owls — top 3: 20 pts" in board and "Foxes — top 3: 0 pts" in board


async def test_a_team_follows_a_slack_user_group(slack_with: SlackWith) -> None:
    async with slack_with(*LEAGUE) as http:
        http.fake.usergroups["S0ENG"] = ["U0ALICE", "U0BOB"]
        leagues = http.service.store.leagues  # type: ignore[attr-defined]

        async def run(text: str, user: str = "U0ROOT") -> None:
            status, _ = await http.command(text, user=user)
            assert status == 200
            await http.adapter.idle()

        await run("team create Eng", "U0ALICE")
        await run("team link Eng <!subteam^S0NOPE|@nope>")
        assert any("cannot read the members" in t for t in http.private_to("U0ROOT"))
        await run("team link Eng <!subteam^S0ENG|@eng>")
        (called,) = http.fake.calls_to("usergroups.users.list")
        assert called.args["usergroup"] == "S0ENG"
        for uid in ("U0ALICE", "U0BOB"):
            assert await leagues.team_of(UserRef(Platform.SLACK, rq.TEAM, uid)) == "Eng"
