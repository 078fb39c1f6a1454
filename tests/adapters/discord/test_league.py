"""Seasons and teams on Discord, end to end (gateway and HTTP interactions against the fake
Discord): an admin starts a season, members of two teams answer, the scheduler's pass ends
the season on time and the podium is posted once."""

from __future__ import annotations

from datetime import timedelta

from bot import basics, scheduling, seasons, teams
from bot.clock import FakeClock
from bot.config import Settings
from bot.domain import Platform, UserRef
from bot.scheduling import Scheduler
from tests.adapters.discord.conftest import QuizWith, Runner, both_modes
from tests.adapters.discord.fake_discord import FakeDiscord
from tests.adapters.discord.helpers import ADMIN, answered, ask, custom_ids, said, text_of
from tests.quiz import service_of
from tests.seasons.conftest import T0

LEAGUE = (basics.feature, scheduling.feature, seasons.feature, teams.feature)


@both_modes
async def test_a_season_of_two_teams_ends_on_time_with_one_podium_on_discord(
    fake: FakeDiscord, run_adapter: Runner, quiz_with: QuizWith, clock: FakeClock
) -> None:
    clock.set(T0)
    async with (
        quiz_with(*LEAGUE, settings=Settings(ask_cooldown=0)) as quiz,
        run_adapter(quiz=quiz),
    ):
        scheduler = service_of(quiz, Scheduler)

        async def run(text: str, user_id: str, **kw: object) -> str:
            sub, _, rest = text.partition(" ")
            inter = await fake.command(sub, {"arguments": rest}, user_id=user_id, **kw)
            return text_of((await said(fake, inter))[0])

        assert "Manage Server" in await run("season start Cup 1", "9001")
        assert "Season Cup runs" in await run("season start Cup 1", "9001", permissions=ADMIN)
        await run("team create Owls", "9001")
        await run("team create Foxes", "9002")
        assert "joined team Owls" in await run("team join Owls", "9001")
        assert "joined team Foxes" in await run("team join Foxes", "9002")
        assert "on team Foxes already" in await run("team join Owls", "9002")
        for _ in range(2):
            posted, pid = await ask(fake)
            post = await quiz.service.store.posts.get(pid)
            assert post is not None
            question = quiz.service.bank.get(post.question_id)
            assert question is not None
            buttons = custom_ids(posted)
            wrong = (question.answer + 1) % question.choice_count
            for user_id, choice in (("9001", question.answer), ("9002", wrong)):
                await said(fake, await fake.click(posted["id"], buttons[choice], user_id=user_id))
            await answered(fake, await fake.command("close", permissions=ADMIN))
        clock.set(T0 + timedelta(days=7))
        await scheduler.tick()
        await scheduler.tick()

        def podiums() -> list[str]:
            return [t for m in fake.messages.values() if "Season Cup is over" in (t := text_of(m))]

        await fake.until(lambda: len(podiums()) == 1)
        (podium,) = podiums()
        assert "🥇" in podium and "— 20 pts (2/2 correct)" in podium
        assert "— 0 pts (0/2 correct)" in podium
        board = await run("team board season", "9002")
        assert "No season is running" in board  # it ended: the all-time team board instead
        await fake.command("team", {"arguments": "board"}, user_id="9002")
        await fake.until(lambda: any("Team board" in text_of(m) for m in fake.messages.values()))
        (shown,) = [t for m in fake.messages.values() if "Team board" in (t := text_of(m))]
        assert "Owls — top 3: 20 pts" in shown and "Foxes — top 3: 0 pts" in shown


@both_modes
async def test_a_team_follows_a_discord_role(
    fake: FakeDiscord, run_adapter: Runner, quiz_with: QuizWith
) -> None:
    role = "877777777777777777"
    fake.role_members[role] = ["9001", "9002"]
    async with quiz_with(*LEAGUE) as quiz, run_adapter(quiz=quiz):

        async def run(text: str, **kw: object) -> str:
            sub, _, rest = text.partition(" ")
            inter = await fake.command(sub, {"arguments": rest}, **kw)
            return text_of((await said(fake, inter))[0])

        await run("team create Eng")
        fake.members_intent = False
        assert "cannot read the members" in await run(
            f"team link Eng <@&{role}>", permissions=ADMIN
        )
        fake.members_intent = True
        linked = await run(f"team link Eng <@&{role}>", permissions=ADMIN)
        assert "Team Eng follows" in linked and "(2 members" in linked
        for uid in ("9001", "9002"):
            who = UserRef(Platform.DISCORD, fake.guild_id, uid)
            assert await quiz.service.store.leagues.team_of(who) == "Eng"  # type: ignore[attr-defined]
