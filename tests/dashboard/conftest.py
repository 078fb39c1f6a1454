"""Dashboard fixtures: the site over all features, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.bank import QuestionBank
from bot.clock import FakeClock
from tests.dashboard.harness import Site, site_of


@pytest.fixture
async def site(store: Any, bank: QuestionBank, clock: FakeClock) -> AsyncIterator[Site]:
    async with site_of(store, bank, clock) as s:
        yield s
