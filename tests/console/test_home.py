"""`/me` in the console: the member's card (console members are admins: the settings
section shows), and its "Practice now" button opens a practice question."""

from __future__ import annotations

import io
from typing import Any

from adapters.console.chat import ConsoleChat
from adapters.console.play import ConsoleSession
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import Platform
from tests.quiz import quiz_of


async def test_quiz_me_in_the_console(store: Any, bank: QuestionBank, clock: FakeClock) -> None:
    out = io.StringIO()
    chat = ConsoleChat(out)
    async with quiz_of(store, {Platform.CONSOLE: chat}, bank, clock) as quiz:
        session = ConsoleSession(quiz, chat, out)
        for line in ("/help", "/me"):
            await session.handle(line)
        before = out.getvalue()
        await session.handle("/press practice-now")
    assert "`/me` — your own quiz card, privately" in before
    card = before.split("`/me`", 1)[1]
    assert "Your quiz card" in card and "No scored answers yet" in card
    assert "Settings (admins)" in card and "[Practice now]" in card
    assert "New question" in out.getvalue()[len(before) :]
