"""Socket Mode end to end: the real aiohttp Socket Mode client connects to the fake Slack's
WebSocket, takes envelopes and acknowledges them. The client retries forever on errors, so
every test here has its own timeout."""

from __future__ import annotations

import pytest
from aiohttp import web

from adapters.slack.app import SlackAdapter
from adapters.slack.chat import SlackChat
from bot.domain import ChannelRef, Locale
from bot.errors import ConfigError
from bot.features import Quiz
from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.conftest import make_config
from tests.adapters.slack.fake_slack import APP_TOKEN, FakeSlack


@pytest.mark.timeout(30)
async def test_command_and_click_over_socket_mode_with_a_redelivered_envelope(
    fake_slack: FakeSlack,
    slack_chat: SlackChat,
    basic_quiz: Quiz,
    slack_channel: ChannelRef,
) -> None:
    config = make_config(fake_slack, socket=True)
    slack_service = basic_quiz.service
    async with SlackAdapter(basic_quiz, slack_chat, config) as adapter:
        await fake_slack.wait_connected()
        (opened,) = fake_slack.calls_to("apps.connections.open")
        assert opened.token == APP_TOKEN

        env = await fake_slack.push("slash_commands", rq.slash_command("ask"))
        ack = await fake_slack.wait_for_ack(env)
        assert ack.get("payload") in (None, {})  # an empty ack: nothing echoed
        (posted,) = await fake_slack.wait_for_calls("chat.postMessage")
        await adapter.idle()
        post = await slack_service.open_post(slack_channel)
        assert post is not None and post.message is not None
        assert post.message.message == posted.response["ts"]
        q = slack_service.bank.get(post.question_id)
        assert q is not None

        click = rq.block_actions(
            post.id, q.answer, user="U0BOB", response_url=fake_slack.response_url("bob")
        )
        first = await fake_slack.push("interactive", click)
        # Slack redelivers an envelope it did not see acknowledged: same payload, new id.
        again = await fake_slack.push("interactive", click, retry_attempt=1)
        await fake_slack.wait_for_ack(first)
        await fake_slack.wait_for_ack(again)
        (reply,) = await fake_slack.wait_for_calls("response_url")
        await adapter.idle()

        assert "✅ Correct" in reply.text and q.text(Locale.EN).explanation[:50] in reply.text
        assert reply.args["response_type"] == "ephemeral"
        (answer,) = await slack_service.store.answers.for_post(post.id)
        assert answer.user.user == "U0BOB" and answer.correct
        assert len(fake_slack.calls_to("response_url")) == 1
        assert await adapter.healthy()
        with pytest.raises(ConfigError, match="SLACK_SIGNING_SECRET"):
            adapter.mount(web.Application())  # nothing unsigned is ever served over HTTP
    # Leaving the adapter closes the WebSocket.
    await fake_slack.wait_until(lambda: fake_slack.open_connections == 0)


@pytest.mark.timeout(30)
async def test_a_refused_app_token_stops_the_start_with_a_message_naming_it(
    fake_slack: FakeSlack, slack_chat: SlackChat, basic_quiz: Quiz
) -> None:
    fake_slack.app_token = "xapp-some-other-token"
    config = make_config(fake_slack, socket=True)
    with pytest.raises(ConfigError, match=r"SLACK_APP_TOKEN.*invalid_auth"):
        async with SlackAdapter(basic_quiz, slack_chat, config):
            pass


@pytest.mark.timeout(30)
async def test_a_refused_bot_token_stops_the_start_with_a_message_naming_it(
    fake_slack: FakeSlack, basic_quiz: Quiz
) -> None:
    async with SlackChat("xoxb-revoked", base_url=fake_slack.api_url) as chat:
        config = make_config(fake_slack, socket=True)
        with pytest.raises(ConfigError, match=r"SLACK_BOT_TOKEN.*invalid_auth"):
            async with SlackAdapter(basic_quiz, chat, config):
                pass
    assert fake_slack.calls_to("apps.connections.open", ok_only=False) == []
