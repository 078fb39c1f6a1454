"""The one private discord.py hook (the gateway's parser table): checked at start-up with a
clear error, and the discord.py range it is known to work with pinned and tested."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import discord
import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from adapters.discord.gateway import HOOKED_EVENT, SUPPORTED_DISCORD_PY, check_hook
from bot.errors import ConfigError
from bot.features import Quiz
from tests.adapters.discord.conftest import Runner
from tests.adapters.discord.fake_discord import FakeDiscord

ROOT = Path(__file__).resolve().parents[3]


def pinned_discord_py() -> Requirement:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (line,) = [d for d in project["dependencies"] if d.startswith("discord.py")]
    return Requirement(line)


def test_the_installed_discord_py_is_in_the_pinned_supported_range() -> None:
    pinned = pinned_discord_py()
    assert str(pinned.specifier) == str(Requirement(f"discord.py{SUPPORTED_DISCORD_PY}").specifier)
    assert Version(discord.__version__) in pinned.specifier
    assert Version("2.3.2") not in pinned.specifier  # no upper-bound-free pin either way
    assert Version("3.0") not in pinned.specifier


def test_the_hook_point_of_the_installed_discord_py_is_there() -> None:
    client = discord.Client(intents=discord.Intents.none())
    assert callable(check_hook(client)[HOOKED_EVENT])


def test_a_missing_hook_point_is_a_config_error_naming_the_version_and_the_fix() -> None:
    client = discord.Client(intents=discord.Intents.none())
    del client._connection.parsers[HOOKED_EVENT]
    expected = (
        rf"discord.py {re.escape(discord.__version__)} has no gateway parser for "
        rf"{HOOKED_EVENT}.*pip install 'discord.py{re.escape(SUPPORTED_DISCORD_PY)}'"
    )
    with pytest.raises(ConfigError, match=expected):
        check_hook(client)
    with pytest.raises(ConfigError, match=r"client\._connection\.parsers"):
        check_hook(object())  # type: ignore[arg-type]  # a discord.py that reshaped its client


async def test_the_adapter_checks_the_hook_before_it_calls_discord(
    fake: FakeDiscord, basic_quiz: Quiz, run_adapter: Runner
) -> None:
    from adapters.discord.adapter import DiscordAdapter

    adapter = DiscordAdapter(
        basic_quiz,
        token="t",
        api_base=fake.api_base,
        gateway_url=fake.gateway_url,
    )
    assert adapter.gateway is not None
    del adapter.gateway.client._connection.parsers[HOOKED_EVENT]
    with pytest.raises(ConfigError, match="has no gateway parser"):
        async with adapter:
            pass
    assert fake.calls == [] and fake.identifies == []
