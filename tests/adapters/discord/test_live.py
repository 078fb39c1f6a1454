"""A live round on Discord end to end, through the gateway and through HTTP interactions:
the real adapter against the fake Discord, the fake clock driving the scheduler's pass.
Two questions, three players: the lobby and each question carry Discord's `<t:…:R>`
countdown, clicks are answered privately (a late one with the time it missed by),
results go in each question's thread, the podium at the end."""

from __future__ import annotations

from datetime import timedelta

from bot.app import FEATURES
from bot.clock import FakeClock
from bot.scheduling import Scheduler
from tests.adapters.discord.conftest import QuizWith, Runner, both_modes
from tests.adapters.discord.fake_discord import FakeDiscord, Json
from tests.adapters.discord.helpers import ADMIN, button, custom_ids, said, text_of
from tests.quiz import service_of

PLAYERS = ("9101", "9102", "9103")


def titled(fake: FakeDiscord, words: str) -> list[Json]:
    return [m for m in fake.messages.values() if words in text_of(m)]


@both_modes
async def test_a_live_round_is_played_on_discord(
    fake: FakeDiscord, run_adapter: Runner, quiz_with: QuizWith, clock: FakeClock
) -> None:
    async with quiz_with(*FEATURES) as quiz, run_adapter(quiz=quiz):
        scheduler = service_of(quiz, Scheduler)
        refused = await fake.command("live", {"arguments": "2 10"}, user_id=PLAYERS[0])
        (reply,) = await said(fake, refused)
        assert "Manage Server" in text_of(reply) and titled(fake, "Live round") == []
        await fake.command("live", {"arguments": "2 10"}, permissions=ADMIN)
        await fake.until(lambda: bool(titled(fake, "to play; the round starts")))
        (lobby,) = titled(fake, "to play; the round starts")
        start = int((clock.now() + timedelta(seconds=30)).timestamp())
        assert f"<t:{start}:R>" in text_of(lobby)
        join = button(lobby, "quiz:live-join:")
        for user in PLAYERS:
            click = await fake.click(lobby["id"], join, user_id=user)
            (joined,) = await said(fake, click)
            assert "You're in" in text_of(joined)
        clock.advance(timedelta(seconds=30))
        for k in (1, 2):
            await scheduler.tick()
            await fake.until(lambda k=k: bool(titled(fake, f"question {k} of 2")))
            (question,) = titled(fake, f"question {k} of 2")
            deadline = int((clock.now() + timedelta(seconds=10)).timestamp())
            assert f"<t:{deadline}:R>" in text_of(question)
            answers = [i for i in custom_ids(question) if i.startswith("quiz:answer:")]
            for i, user in enumerate(PLAYERS):
                click = await fake.click(question["id"], answers[i], user_id=user)
                (locked,) = await said(fake, click)
                assert "Locked in" in text_of(locked)
                clock.advance(timedelta(seconds=2))
            clock.advance(timedelta(seconds=4, milliseconds=500))
            late = await fake.click(question["id"], answers[0], user_id="9199")
            (missed,) = await said(fake, late)
            assert "0.5 s late" in text_of(missed)
            await scheduler.tick()
            await fake.until(lambda k=k: bool(titled(fake, f"Results · question {k}")))
            (results,) = titled(fake, f"Results · question {k}")
            assert results["channel_id"] != fake.channel_id  # in the question's thread
            assert "Top 3 of the round" in text_of(results)
        await fake.until(lambda: bool(titled(fake, "the podium")))
        (podium,) = titled(fake, "the podium")
        assert "🥇" in text_of(podium)
        await fake.until(lambda: bool(titled(fake, "Standings")))
        assert (
            len(titled(fake, "question 1 of 2")) == 1 and len(titled(fake, "question 2 of 2")) == 1
        )
