"""Configuration of the adapter: invite URL, shard ids, a rejected token, endpoints."""

from __future__ import annotations

import base64
from urllib.parse import parse_qs, urlsplit

import pytest
from discord.gateway import DiscordWebSocket
from discord.http import Route

from adapters.discord.__main__ import main as discord_cli
from adapters.discord.adapter import DiscordAdapter, parse_shard_ids
from adapters.discord.invite import client_id_from_token, invite_url
from bot.config import Settings
from bot.errors import ConfigError
from bot.features import Quiz
from tests.adapters.discord.conftest import Runner
from tests.adapters.discord.fake_discord import FakeDiscord

# View Channel, Send Messages, Embed Links, Attach Files, Read Message History,
# Create Public Threads, Send Messages in Threads.
EXPECTED_PERMISSIONS = (
    (1 << 10) | (1 << 11) | (1 << 14) | (1 << 15) | (1 << 16) | (1 << 35) | (1 << 38)
)


def test_invite_url_asks_for_exactly_the_scopes_and_permissions_needed() -> None:
    url = urlsplit(invite_url(833333333333333333))
    assert (url.scheme, url.netloc, url.path) == ("https", "discord.com", "/oauth2/authorize")
    query = parse_qs(url.query)
    assert query["client_id"] == ["833333333333333333"]
    assert query["scope"] == ["bot applications.commands"]
    assert query["permissions"] == [str(EXPECTED_PERMISSIONS)] == ["309237763072"]


def test_client_id_is_read_from_the_bot_token() -> None:
    head = base64.b64encode(b"833333333333333333").decode().rstrip("=")
    assert client_id_from_token(f"{head}.GabcDE.secretpart") == 833333333333333333
    with pytest.raises(ConfigError, match="--client-id"):
        client_id_from_token("not a token")


def test_invite_command_prints_the_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert discord_cli(["invite", "--client-id", "42"]) == 0
    assert "client_id=42" in capsys.readouterr().out


def test_shard_ids_accept_lists_and_ranges() -> None:
    assert parse_shard_ids("") == []
    assert parse_shard_ids("0, 2,5-7") == [0, 2, 5, 6, 7]
    with pytest.raises(ConfigError, match="QUIZBOT_DISCORD_SHARD_IDS"):
        parse_shard_ids("a-b")


async def test_shard_ids_must_fit_the_shard_count(basic_quiz: Quiz) -> None:
    with pytest.raises(ConfigError, match=r"0\.\.1"):
        DiscordAdapter(basic_quiz, token="t", shard_count=2, shard_ids=[2])
    with pytest.raises(ConfigError, match="SHARD_COUNT"):
        DiscordAdapter(basic_quiz, token="t", shard_ids=[0])


async def test_from_settings_reads_the_discord_variables(
    basic_quiz: Quiz, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    settings = Settings(
        DISCORD_TOKEN="tok",
        DISCORD_API_BASE="http://proxy:8080/api/v10/",
        DISCORD_GATEWAY_URL="ws://proxy:8081/",
        QUIZBOT_ADMINS="111,222",
    )
    adapter = DiscordAdapter.from_settings(settings, basic_quiz)
    assert adapter.path.admin_ids == {"111", "222"}
    assert adapter.dev_guild is None and not adapter.http_mode
    assert adapter.rest.api_base == "http://proxy:8080/api/v10"
    with pytest.raises(ConfigError, match="DISCORD_TOKEN"):
        DiscordAdapter.from_settings(Settings(), basic_quiz)


async def test_a_rejected_token_is_a_config_error_naming_the_fix(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    fake.fail("GET", "/users/@me", 401, 0)
    before = (Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY)
    with pytest.raises(ConfigError, match="Reset Token"):
        async with run_adapter():
            pass
    assert before == (Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY)


async def test_endpoints_point_at_the_proxy_while_running_and_are_restored(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    before = Route.BASE
    async with run_adapter():
        assert fake.api_base == Route.BASE
        assert str(DiscordWebSocket.DEFAULT_GATEWAY) == fake.gateway_url
    assert before == Route.BASE
