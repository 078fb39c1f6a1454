"""`quizbot serve` itself: settings -> Slack in HTTP mode on QUIZBOT_HTTP_PORT -> a posted
question; and no credentials -> a message naming the variables."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import aiohttp
import pytest

from bot.app import serve
from bot.config import load_settings
from bot.errors import ConfigError
from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.fake_slack import BOT_TOKEN, FakeSlack
from tests.polling import eventually


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.timeout(30)
async def test_serve_runs_slack_http_mode_until_stopped(
    fake_slack: FakeSlack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    monkeypatch.setenv("QUIZBOT_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", rq.SIGNING_SECRET)
    monkeypatch.delenv("SLACK_APP_TOKEN", raising=False)
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    monkeypatch.setenv("SLACK_API_URL", fake_slack.api_url)
    monkeypatch.setenv("QUIZBOT_RUNNER", "off")
    monkeypatch.setenv("QUIZBOT_HTTP_PORT", str(port))
    stop = asyncio.Event()
    task = asyncio.create_task(serve(load_settings(), stop))
    url = f"http://127.0.0.1:{port}/slack/events"
    body = rq.form_body(rq.slash_command("ask", response_url=fake_slack.response_url("a")))
    async with aiohttp.ClientSession() as http:

        async def answered() -> bool:  # poll until the port is up
            assert not task.done(), task.exception()
            try:
                async with http.post(url, data=body, headers=rq.signed_headers(body)) as resp:
                    assert resp.status == 200
                    return True
            except aiohttp.ClientConnectionError:
                return False

        await eventually(answered, timeout=20, interval=0.05, what="serve to listen")
    await fake_slack.wait_until(lambda: bool(fake_slack.calls_to("chat.postMessage")))
    stop.set()
    await asyncio.wait_for(task, 20)
    (posted,) = fake_slack.calls_to("chat.postMessage")
    assert posted.action_ids and posted.args["channel"] == rq.CHANNEL


async def test_serve_without_credentials_names_the_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in ("SLACK_BOT_TOKEN", "DISCORD_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ConfigError, match=r"SLACK_BOT_TOKEN.*DISCORD_TOKEN"):
        await serve(load_settings(), asyncio.Event())


@pytest.mark.timeout(30)
async def test_serve_runs_the_multi_workspace_mode_and_says_so(
    fake_slack: FakeSlack,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = free_port()
    monkeypatch.setenv("QUIZBOT_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    monkeypatch.setenv("SLACK_CLIENT_ID", fake_slack.client_id)
    monkeypatch.setenv("SLACK_CLIENT_SECRET", fake_slack.client_secret)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", rq.SIGNING_SECRET)
    for var in ("SLACK_APP_TOKEN", "DISCORD_TOKEN", "QUIZBOT_WEB_SECRET"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SLACK_API_URL", fake_slack.api_url)
    monkeypatch.setenv("QUIZBOT_RUNNER", "off")
    monkeypatch.setenv("QUIZBOT_HTTP_PORT", str(port))
    stop = asyncio.Event()
    caplog.set_level("INFO")
    task = asyncio.create_task(serve(load_settings(), stop))
    body = rq.form_body(rq.slash_command("ask", response_url=fake_slack.response_url("a")))
    async with aiohttp.ClientSession() as http:

        async def install_page() -> bool:
            assert not task.done(), task.exception()
            try:
                async with http.get(f"http://127.0.0.1:{port}/slack/install") as resp:
                    return resp.status == 200 and "Add to Slack" in await resp.text()
            except aiohttp.ClientConnectionError:
                return False

        await eventually(install_page, timeout=20, interval=0.05, what="serve to listen")
        # A workspace that never installed: acknowledged, nothing sent for it.
        url = f"http://127.0.0.1:{port}/slack/events"
        async with http.post(url, data=body, headers=rq.signed_headers(body)) as resp:
            assert resp.status == 200
    stop.set()
    await asyncio.wait_for(task, 20)
    assert any("multi-workspace OAuth" in r.getMessage() for r in caplog.records)
    assert not fake_slack.calls_to("chat.postMessage", ok_only=False)
    assert not fake_slack.calls_to("auth.test", ok_only=False)  # no token to check at start
