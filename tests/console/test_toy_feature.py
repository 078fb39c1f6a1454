"""A feature added in one module (tests/toy_feature.py) works in the console through the
real registry: its command is listed and runs, its button is clicked."""

from __future__ import annotations

import io
from typing import Any

from adapters.console.chat import ConsoleChat
from adapters.console.play import ConsoleSession
from bot.app import FEATURES
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import Platform
from tests import toy_feature
from tests.quiz import quiz_of


async def test_a_toy_feature_is_listed_run_and_clicked_in_the_console(
    store: Any, bank: QuestionBank, clock: FakeClock
) -> None:
    out = io.StringIO()
    chat = ConsoleChat(out)
    features = [*FEATURES, toy_feature.feature]
    async with quiz_of(store, {Platform.CONSOLE: chat}, bank, clock, features=features) as quiz:
        session = ConsoleSession(quiz, chat, out)
        for line in ("/help", "/kudos", "/as bob", "/press kudos"):
            await session.handle(line)
    text = out.getvalue()
    assert "`/quiz kudos` — thank someone in the channel" in text
    assert "you did something great." in text and "[Say thanks]" in text
    assert "bob thanks you" in text
