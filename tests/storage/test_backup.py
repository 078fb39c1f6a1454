"""`quizbot db backup` / `restore` for the embedded SQLite database."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import AnswerStatus, ChannelRef, Platform, UserRef
from bot.errors import StorageError
from storage.backup import backup, restore
from storage.store import SqlStore
from tests.fakes import RecordingChat
from tests.polling import eventually
from tests.quiz import asked, quiz_of

ROOT = Path(__file__).resolve().parents[2]


async def test_backup_taken_while_answers_are_written_keeps_every_acknowledged_answer(
    tmp_path: Path, sqlite_template: Path, bank: QuestionBank, clock: FakeClock
) -> None:
    db = tmp_path / "live.db"
    db.write_bytes(sqlite_template.read_bytes())
    url = f"sqlite+aiosqlite:///{db}"
    async with AsyncExitStack() as stack, SqlStore(url, clock=clock) as store:
        chats = {Platform.SLACK: RecordingChat()}
        quiz = await stack.enter_async_context(
            quiz_of(store, chats, bank, clock, features=[], seed=1)
        )
        service = quiz.service
        post = await asked(service, ChannelRef(Platform.SLACK, "T", "C"))
        acknowledged: list[str] = []
        stop = asyncio.Event()

        async def writer() -> None:
            i = 0
            while not stop.is_set():
                who = UserRef(Platform.SLACK, "T", f"U{i}", f"u{i}")
                reply = await service.record_answer(post.id, who, i % 4)
                assert reply.outcome.status is AnswerStatus.RECORDED
                acknowledged.append(who.user)
                i += 1

        task = asyncio.create_task(writer())
        await eventually(lambda: len(acknowledged) >= 50, timeout=30, what="the writer under way")
        before = set(acknowledged)
        target = tmp_path / "backup.db"
        await asyncio.to_thread(backup, url, target)
        stop.set()
        await task
        await service.drain_updates()
        total = len(acknowledged)

    restored = tmp_path / "restored.db"
    restored.write_bytes(sqlite_template.read_bytes())
    restore(f"sqlite:///{restored}", target)
    async with SqlStore(f"sqlite+aiosqlite:///{restored}", clock=clock) as copy:
        answers = await copy.answers.for_post(post.id)
    kept = {a.user.user for a in answers}
    assert before <= kept  # everything acknowledged before the backup started
    assert len(kept) <= total


def test_backup_refuses_postgres_and_existing_targets(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="pg_dump"):
        backup("postgresql+asyncpg://u@h/db", tmp_path / "x.db")
    existing = tmp_path / "exists.db"
    existing.write_text("x")
    db = tmp_path / "q.db"
    db.write_text("")
    with pytest.raises(StorageError, match="exists"):
        backup(f"sqlite:///{db}", existing)


def test_restore_refuses_a_file_that_is_not_a_quizbot_database(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"definitely not sqlite" * 100)
    with pytest.raises(StorageError, match="not a quizbot database"):
        restore(f"sqlite:///{tmp_path / 'q.db'}", junk)


def test_backup_and_restore_commands(tmp_path: Path, sqlite_template: Path) -> None:
    db = tmp_path / "quizbot.db"
    db.write_bytes(sqlite_template.read_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUIZBOT_")}
    env["QUIZBOT_DATABASE_URL"] = f"sqlite:///{db}"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "bot.cli", "db", *args],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )

    done = cli("backup", str(tmp_path / "b.db"))
    assert done.returncode == 0 and "backed up" in done.stdout, done.stderr
    again = cli("backup", str(tmp_path / "b.db"))
    assert again.returncode == 2 and "exists" in again.stderr
    assert cli("restore", str(tmp_path / "b.db")).returncode == 0
