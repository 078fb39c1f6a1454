"""Fixtures: a fake Discord, and the real adapter (real discord.py client) wired to a quiz
service on the test database (SQLite and PostgreSQL)."""

from __future__ import annotations

import random
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest

# discord.py imports the stdlib `audioop` (voice), deprecated since 3.11; the suite turns
# warnings into errors. The lead's pyproject filter makes this redundant once added.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord  # noqa: F401

from adapters.discord.client import DiscordAdapter
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.commands import core_commands
from bot.domain import Platform
from bot.ports import Chat
from bot.quiz import QuizService
from tests.adapters.discord.fake_discord import FakeDiscord

# Every test here talks to a real client over sockets: bound each one.
pytestmark = pytest.mark.timeout(30)

Runner = Callable[..., AbstractAsyncContextManager[DiscordAdapter]]


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as f:
        yield f


@pytest.fixture
def chats() -> dict[str, Chat]:
    """Filled with the adapter's chat once it exists (the service keeps this mapping)."""
    return {}


@pytest.fixture
def discord_service(
    store: object, chats: dict[str, Chat], bank: QuestionBank, clock: FakeClock
) -> QuizService:
    return QuizService(
        store,  # type: ignore[arg-type]
        chats,
        bank,
        clock,
        rng=random.Random(7),
        count_update_interval=0.0,
    )


@pytest.fixture
def run_adapter(fake: FakeDiscord, discord_service: QuizService, chats: dict[str, Chat]) -> Runner:
    """``async with run_adapter(**options) as adapter``: a started adapter, READY, whose
    chat is the service's Discord chat (``commands=`` replaces the core's command set).
    A second one on the same database is a restart."""

    @asynccontextmanager
    async def run(**options: Any) -> AsyncIterator[DiscordAdapter]:
        settings: dict[str, Any] = {
            "token": "fake-token",
            "api_base": fake.api_base,
            "gateway_url": fake.gateway_url,
            "dev_guild": int(fake.guild_id),
            "guild_ready_timeout": 0.05,
        }
        commands = options.pop("commands", None) or core_commands()
        settings.update(options)
        adapter = DiscordAdapter(discord_service, commands, **settings)
        chats[Platform.DISCORD] = adapter.chat
        async with adapter:
            await adapter.wait_until_ready(timeout=10)
            yield adapter

    return run
