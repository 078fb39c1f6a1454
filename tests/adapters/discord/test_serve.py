"""`quizbot serve` with Discord: malformed gateway payloads never stop it (it exited with
status 2 on a type-3 interaction without ``data``), and with DISCORD_PUBLIC_KEY it serves
``/discord/interactions`` on QUIZBOT_HTTP_PORT without a gateway connection."""

from __future__ import annotations

import asyncio
import gc
import json
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest

from bot.app import FULL_COLLECTION_EVERY, serve
from bot.config import load_settings
from bot.errors import ConfigError
from tests.adapters.discord.fake_discord import FakeDiscord
from tests.adapters.discord.helpers import ADMIN, ask, custom_ids, final_edit, said, text_of
from tests.polling import eventually
from tests.questions.test_team_files import HEADER, ROW

pytestmark = pytest.mark.timeout(40)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def environment(fake: FakeDiscord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    port = free_port()
    for var in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_PUBLIC_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("QUIZBOT_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    monkeypatch.setenv("DISCORD_TOKEN", "fake-token")
    monkeypatch.setenv("DISCORD_API_BASE", fake.api_base)
    monkeypatch.setenv("DISCORD_GATEWAY_URL", fake.gateway_url)
    monkeypatch.setenv("QUIZBOT_DISCORD_DEV_GUILD", fake.guild_id)
    monkeypatch.setenv("QUIZBOT_RUNNER", "off")
    monkeypatch.setenv("QUIZBOT_ASK_COOLDOWN", "0")
    monkeypatch.setenv("QUIZBOT_HTTP_PORT", str(port))
    return port


async def until(check: Callable[[], Awaitable[bool]], task: asyncio.Task[None]) -> None:
    """Poll `check` against a deadline while `serve` runs (it must not end)."""

    async def while_serving() -> bool:
        assert not task.done(), task.exception()
        return await check()

    await eventually(while_serving, timeout=20, interval=0.05, what=f"serve: {check.__name__}")


async def test_serve_keeps_running_through_malformed_gateway_payloads(
    fake: FakeDiscord, environment: int
) -> None:
    stop = asyncio.Event()
    task = asyncio.create_task(serve(load_settings(), stop))

    async def identified() -> bool:
        return bool(fake.identifies) and bool(fake.of("PUT", r"/applications/.*/commands"))

    await until(identified, task)
    message, _ = await ask(fake)
    click = fake.click_payload(message["id"], custom_ids(message)[0], user_id="7801")
    for broken in ({**click, "data": None}, {k: v for k, v in click.items() if k != "data"}, []):
        await fake.send_frame("INTERACTION_CREATE", broken)
    await fake.send_frame("INTERACTION_CREATE", {**click, "type": 77})
    real = await fake.click(message["id"], custom_ids(message)[0], user_id="7802")
    (reply,) = await said(fake, real)
    assert "Correct" in text_of(reply) or "Not quite" in text_of(reply)
    assert not task.done()
    stop.set()
    await asyncio.wait_for(task, 20)  # a clean stop: no exception


async def test_serve_answers_http_interactions_without_a_gateway(
    fake: FakeDiscord, environment: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISCORD_PUBLIC_KEY", fake.http.public_key)
    thresholds = gc.get_threshold()
    stop = asyncio.Event()
    task = asyncio.create_task(serve(load_settings(), stop))
    fake.http.endpoint = f"http://127.0.0.1:{environment}/discord/interactions"
    ping = {"type": 1, "id": "1", "application_id": fake.app_id}

    async def pong() -> bool:
        try:
            return await fake.http.post(ping) == (200, {"type": 1})
        except aiohttp.ClientConnectionError:
            return False

    await until(pong, task)
    body = json.dumps(ping).encode()
    forged = {**fake.http.signed_headers(body), "X-Signature-Ed25519": "00" * 64}
    assert (await fake.http.post(ping, body=body, headers=forged))[0] == 401
    message, _ = await ask(fake)
    assert custom_ids(message)
    assert fake.identifies == []  # no gateway connection in HTTP mode
    url = f"http://127.0.0.1:{environment}/healthz"
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        health = await resp.json()
    assert health["checks"]["discord"] == "ok"
    # The composition root gives the adapter the memory clinic (the runner is off here).
    snapshot = fake.attach("train.pickle", b"\x80\x04N.")
    (reply,) = await said(fake, await fake.command("clinic", {"snapshot": snapshot}))
    assert "QUIZBOT_RUNNER=off" in text_of(reply)
    # ... and question files: `/quiz import file:…` (admins).
    questions = fake.attach("ours.csv", f"{HEADER}\n{ROW}\n".encode())
    imported = await fake.command("import", {"file": questions}, permissions=ADMIN)
    done = await final_edit(fake, imported, "Question import")
    assert "1 new question from 1 entries" in text_of(done.json)
    # While serving, the start-up heap is frozen and full collections are spaced out.
    assert gc.get_freeze_count() > 0 and gc.get_threshold()[2] == FULL_COLLECTION_EVERY
    stop.set()
    await asyncio.wait_for(task, 20)
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds  # as it was


async def test_a_public_key_without_a_token_names_the_missing_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in ("SLACK_BOT_TOKEN", "DISCORD_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("DISCORD_PUBLIC_KEY", "00" * 32)
    with pytest.raises(ConfigError, match="DISCORD_PUBLIC_KEY needs DISCORD_TOKEN"):
        await serve(load_settings(), asyncio.Event())
