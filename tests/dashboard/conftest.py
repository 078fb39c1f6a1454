"""Dashboard fixtures: the site over all features, on SQLite and PostgreSQL; the fake Slack
and Discord whose sign-in and admin rules the site asks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.bank import QuestionBank
from bot.clock import FakeClock
from tests.adapters.discord.fake_discord import FakeDiscord
from tests.adapters.slack.fake_slack import FakeSlack
from tests.dashboard.harness import Site, site_of


@pytest.fixture
async def site(store: Any, bank: QuestionBank, clock: FakeClock) -> AsyncIterator[Site]:
    async with site_of(store, bank, clock) as s:
        yield s


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def discord() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        yield fake
