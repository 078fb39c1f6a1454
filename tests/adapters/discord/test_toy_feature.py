"""A feature added in one module (tests/toy_feature.py) works on Discord, gateway and HTTP,
through the real registry: its command is synced and runs, its button is clicked."""

from __future__ import annotations

from bot.app import FEATURES
from tests import toy_feature
from tests.adapters.discord.conftest import QuizWith, Runner, both_modes
from tests.adapters.discord.fake_discord import FakeDiscord
from tests.adapters.discord.helpers import custom_ids, said, text_of


@both_modes
async def test_a_toy_feature_is_synced_run_and_clicked_on_discord(
    fake: FakeDiscord, run_adapter: Runner, quiz_with: QuizWith
) -> None:
    async with (
        quiz_with(*FEATURES, toy_feature.feature) as quiz,
        run_adapter(quiz=quiz),
    ):
        (put,) = fake.of("PUT", rf"/applications/{fake.app_id}/guilds/{fake.guild_id}/commands")
        (quiz_command,) = put.json
        assert "kudos" in [o["name"] for o in quiz_command["options"]]
        await fake.command("kudos", user_id="9001")
        await fake.until(
            lambda: any("did something great." in text_of(m) for m in fake.messages.values())
        )
        posted = next(m for m in fake.messages.values() if "did something great." in text_of(m))
        assert custom_ids(posted) == ["quiz:kudos:0:9001"]
        click = await fake.click(posted["id"], "quiz:kudos:0:9001", user_id="9002")
        (reply,) = await said(fake, click)
        assert "thanks 9001" in text_of(reply)
