"""A feature added in one module (tests/toy_feature.py) works on Slack through the real
registry: its command runs (a public reply with its button) and its button is clicked."""

from __future__ import annotations

from bot.app import FEATURES
from tests import toy_feature
from tests.adapters.slack.conftest import SlackWith


async def test_a_toy_feature_runs_and_its_button_is_clicked_on_slack(slack_with: SlackWith) -> None:
    async with slack_with(*FEATURES, toy_feature.feature) as http:
        status, _ = await http.command("kudos", user="U0ALICE")
        assert status == 200
        await http.adapter.idle()
        (posted,) = http.fake.calls_to("chat.postMessage")
        assert "did something great." in posted.text
        actions = [
            e["action_id"]
            for block in posted.args["blocks"]
            if block["type"] == "actions"
            for e in block["elements"]
        ]
        assert actions == ["quiz:kudos:0:U0ALICE"]
        status, _ = await http.press(actions[0], user="U0BOB")
        assert status == 200
        await http.adapter.idle()
        assert any("thanks U0ALICE" in text for text in http.private_to("U0BOB"))
