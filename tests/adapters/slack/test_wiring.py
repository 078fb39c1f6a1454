"""The wiring `quizbot serve` uses, from settings to a posted question (HTTP mode)."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from adapters.slack import SlackAdapter, SlackChat, SlackConfig
from bot.app import build_core
from bot.config import load_settings
from bot.domain import Platform
from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.fake_slack import BOT_TOKEN, FakeSlack


@pytest.mark.timeout(30)
async def test_settings_to_a_posted_question(
    fake_slack: FakeSlack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUIZBOT_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", rq.SIGNING_SECRET)
    monkeypatch.delenv("SLACK_APP_TOKEN", raising=False)
    monkeypatch.setenv("SLACK_API_URL", fake_slack.api_url)
    monkeypatch.setenv("QUIZBOT_RUNNER", "off")
    settings = load_settings()

    config = SlackConfig.from_settings(settings)
    assert config is not None and not config.socket_mode
    async with AsyncExitStack() as stack:
        chat = await stack.enter_async_context(SlackChat(config.bot_token, base_url=config.api_url))
        core = await stack.enter_async_context(build_core(settings, {Platform.SLACK: chat}))
        slack = await stack.enter_async_context(SlackAdapter(core.quiz, chat, config))
        app = web.Application()  # in `serve`: the adapters.web server's `app`
        slack.mount(app)
        runner = web.AppRunner(app, handle_signals=False)
        await runner.setup()
        stack.push_async_callback(runner.cleanup)
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"

        body = rq.form_body(rq.slash_command("ask", response_url=fake_slack.response_url("a")))
        http = await stack.enter_async_context(aiohttp.ClientSession())
        async with http.post(url, data=body, headers=rq.signed_headers(body)) as resp:
            assert resp.status == 200
        await slack.idle()
    (posted,) = fake_slack.calls_to("chat.postMessage")
    assert posted.action_ids and posted.args["channel"] == rq.CHANNEL
