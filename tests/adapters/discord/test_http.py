"""The HTTP interactions endpoint: signatures (Ed25519 over timestamp + body), PING, inline
answers, no gateway connection, and what a forged, stale or unsigned request gets."""

from __future__ import annotations

import json
import time

import pytest
from nacl.signing import SigningKey

from adapters.discord.adapter import DiscordAdapter
from bot.errors import ConfigError
from bot.features import Quiz
from storage.store import SqlStore
from tests.adapters.discord.conftest import Runner
from tests.adapters.discord.fake_discord import EPHEMERAL, FakeDiscord
from tests.adapters.discord.helpers import ask, custom_ids, text_of


@pytest.fixture
def mode() -> str:
    """Every test here runs the adapter in HTTP mode."""
    return "http"


PING = {"type": 1, "id": "1250000000000000009", "application_id": "833333333333333333"}


async def test_a_signed_ping_gets_a_pong_and_the_gateway_is_never_used(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter() as adapter:
        assert await fake.http.post(PING) == (200, {"type": 1})
        assert adapter.gateway is None and fake.identifies == [] and await adapter.healthy()
        # /quiz is still synced over REST, with the bot token.
        assert fake.of("PUT", rf"/applications/{fake.app_id}/guilds/{fake.guild_id}/commands")


async def test_forged_stale_and_unsigned_requests_get_401_and_nothing_is_stored(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore
) -> None:
    async with run_adapter():
        message, post_id = await ask(fake)
        calls = len(fake.calls)
        click = fake.click_payload(message["id"], custom_ids(message)[0], user_id="7301")
        body = json.dumps(click).encode()
        http = fake.http
        attempts = {
            "forged": http.signed_headers(body, key=SigningKey.generate()),
            "stale": http.signed_headers(body, timestamp=int(time.time()) - 6 * 60),
            "future": http.signed_headers(body, timestamp=int(time.time()) + 6 * 60),
            "unsigned": {"Content-Type": "application/json"},
            "not hex": {**http.signed_headers(body), "X-Signature-Ed25519": "zz"},
            "short": {**http.signed_headers(body), "X-Signature-Ed25519": "00" * 10},
            "no timestamp": {**http.signed_headers(body), "X-Signature-Timestamp": ""},
        }
        for name, headers in attempts.items():
            status, _ = await http.post(click, body=body, headers=headers)
            assert status == 401, name
        # A body changed after signing (the signature was over another one).
        tampered = json.dumps({**click, "locale": "el"}).encode()
        assert (await http.post(click, body=tampered, headers=http.signed_headers(body)))[0] == 401
        # A PING with a bad signature too: Discord checks the endpoint with exactly that.
        ping = json.dumps(PING).encode()
        forged = http.signed_headers(ping, key=SigningKey.generate())
        assert (await http.post(PING, body=ping, headers=forged))[0] == 401
        assert await store.answers.for_post(post_id) == []
        assert len(fake.calls) == calls  # nothing said to anyone


async def test_an_answer_is_the_http_response_itself(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore
) -> None:
    async with run_adapter():
        message, post_id = await ask(fake)
        click = fake.click_payload(message["id"], custom_ids(message)[1], user_id="7302")
        fake.interactions[click["id"]] = fake.interaction_record(click)
        status, answer = await fake.http.post(click)
        assert status == 200 and answer["type"] == 4
        assert answer["data"]["flags"] == EPHEMERAL
        assert "Correct" in text_of(answer["data"]) or "Not quite" in text_of(answer["data"])
        # A replay of the same signed request (within its 5 minutes) counts once.
        status, again = await fake.http.post(click)
        assert status == 200 and "already answered" in text_of(again["data"])
        (stored,) = await store.answers.for_post(post_id)
        assert stored.user.user == "7302"


async def test_a_body_over_a_mebibyte_is_refused(fake: FakeDiscord, run_adapter: Runner) -> None:
    async with run_adapter():
        body = b"{" + b" " * (1 << 20) + b"}"
        status, _ = await fake.http.post(None, body=body, headers=fake.http.signed_headers(body))
        assert status == 413


async def test_a_signed_body_that_is_not_json_is_a_400(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter():
        body = b"not json"
        status, _ = await fake.http.post(None, body=body, headers=fake.http.signed_headers(body))
        assert status == 400


async def test_a_public_key_that_is_not_one_is_a_config_error(basic_quiz: Quiz) -> None:
    for key in ("", "abc", "zz" * 32, "00" * 31):
        with pytest.raises(ConfigError, match="DISCORD_PUBLIC_KEY must be"):
            DiscordAdapter(basic_quiz, token="t", public_key=key)


async def test_a_redelivered_command_runs_once(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore
) -> None:
    async with run_adapter():
        inter = fake.interaction(
            2,
            {"id": "1", "name": "quiz", "options": [{"name": "ask", "type": 1, "options": []}]},
            user_id="7303",
        )
        fake.interactions[inter["id"]] = fake.interaction_record(inter)
        first, _ = await fake.http.post(inter)
        second, _ = await fake.http.post(inter)
        assert (first, second) == (200, 409)
        assert len(fake.of("POST", rf"/channels/{fake.channel_id}/messages")) == 1
