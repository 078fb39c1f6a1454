"""Fixtures both platforms' adapter tests share, on each platform's own `quiz_with`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

import pytest

from bot.features import Quiz


@pytest.fixture
async def basic_quiz(
    quiz_with: Callable[..., AbstractAsyncContextManager[Quiz]],
) -> AsyncIterator[Quiz]:
    """The quiz with the basic commands (ask, close, leaderboard, stats, lang, help)."""
    async with quiz_with() as quiz:
        yield quiz
