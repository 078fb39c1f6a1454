"""Team packs in the console: the submit form asked one field per line (a problem asks
that field again), review and flags with `/press`, `/quiz ask team`, mydata as a file on
disk, forget-me, and `/import PATH` into the console's workspace."""

from __future__ import annotations

import io
import json
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from adapters.console.chat import ConsoleChat
from adapters.console.play import WORKSPACE, ConsoleSession
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import Platform
from bot.team import Workspace
from tests.core.team import GOOD
from tests.questions.test_team_files import HEADER, ROW
from tests.quiz import quiz_of


async def test_a_team_question_from_submit_to_forget_me_in_the_console(
    store: Any, bank: QuestionBank, clock: FakeClock, tmp_path: Path
) -> None:
    async with AsyncExitStack() as stack:
        await _submit_to_forget_me(stack, store, bank, clock, tmp_path)


async def _submit_to_forget_me(
    stack: AsyncExitStack, store: Any, bank: QuestionBank, clock: FakeClock, tmp_path: Path
) -> None:
    out = io.StringIO()
    chat = ConsoleChat(out, image_dir=tmp_path / "files")
    quiz = await stack.enter_async_context(
        quiz_of(store, {Platform.CONSOLE: chat}, bank, clock, seed=2)
    )
    service = quiz.service
    session = ConsoleSession(quiz, chat, out, user="ann")
    assert WORKSPACE == "console"
    upload = tmp_path / "ours.csv"
    upload.write_text(f"{HEADER}\n{ROW}\n{ROW.replace(',en,', ',xx,')}\n")
    script = [
        "/submit",
        GOOD["prompt"],
        "gpu-a | gpu-b | gpu-c",
        "Q",  # not a letter of the choices: asked again
        GOOD["explanation"],
        "our-cluster, 1",
        "B",
        "/review",
        "/press approve",
        "/ask team",
        "/as bob",
        "2",
        "/close",
        "/press flag",
        "typo",
        "-",
        "/review",
        "/mydata",
        "/forget-me",
        "/as ann",
        "/press forget",
        "/as bob",
        "/press forget",
        f"/import {upload}",
    ]
    for line in script:
        await session.handle(line)
    await service.drain_updates()
    text = out.getvalue()
    assert "== Submit a question ==" in text and "'Q' is not one of your choices" in text
    assert "waits for review" in text and "joins the team pack" in text
    assert GOOD["prompt"] in text and "[Report a problem]" in text
    assert "the admins will look at this question" in text and "1 report (typo 1)" in text
    (saved,) = (tmp_path / "files").glob("quizbot-data-console-bob.json")
    assert json.loads(saved.read_text())["member"]["user"] == "bob"
    assert "belongs to someone else" in text and "Done: 1 answer and" in text
    assert "1 new question from 2 entries" in text and "line 3: locale: 'xx'" in text
    team = await service.pools.state(Workspace(Platform.CONSOLE, "console"))
    assert len(team.approved) == 2
