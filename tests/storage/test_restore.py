"""`quizbot db restore` accepts only a quizbot database it knows, and keeps the old one."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.errors import StorageError
from storage.backup import restore
from storage.engine import create_engine, head_revision, upgrade
from storage.models import Base
from storage.restore_check import expected_schema
from tests.hostile import assert_bounded, measure

ROOT = Path(__file__).resolve().parents[2]


def tables(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    finally:
        conn.close()
    return {name for (name,) in rows}


def sql(path: Path, *statements: str) -> Path:
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()
    return path


def foreign_db(path: Path, revision: str = "abc123") -> Path:
    """Another application's database that also uses Alembic: two tables."""
    return sql(
        path,
        "CREATE TABLE alembic_version (version_num VARCHAR(32) PRIMARY KEY)",
        f"INSERT INTO alembic_version VALUES ('{revision}')",
        "CREATE TABLE stuff (x)",
    )


def migrated(path: Path, revision: str = "head") -> Path:
    async def run() -> None:
        engine = create_engine(f"sqlite+aiosqlite:///{path}")
        await upgrade(engine, revision)
        await engine.dispose()

    asyncio.run(run())
    return path


@pytest.fixture
def live(tmp_path: Path, sqlite_template: Path) -> Path:
    db = tmp_path / "quizbot.db"
    db.write_bytes(sqlite_template.read_bytes())
    sql(
        db,
        "INSERT INTO channels (platform, workspace, channel, locale, timezone, demo_policy, "
        "created_at) VALUES ('slack', 'T', 'C', 'en', 'UTC', 'auto', '2027-01-01 00:00:00')",
    )
    return db


def url(db: Path) -> str:
    return f"sqlite:///{db}"


def zip_file(path: Path) -> Path:
    path.write_bytes(b"PK\x03\x04" * 100)
    return path


def directory(path: Path) -> Path:
    path.mkdir()
    return path


NOT_QUIZBOT: dict[str, tuple[Callable[[Path], Path], str]] = {
    "foreign": (foreign_db, "which this quizbot does not know (it knows 0001.."),
    "foreign-at-our-revision": (
        lambda p: foreign_db(p, "0005"),
        "missing tables answers, channels, demo_runs",
    ),
    "directory": (directory, "is a directory; pass the file that `quizbot db backup"),
    "zip": (zip_file, "it is not an SQLite file"),
    "plain-sqlite": (lambda p: sql(p, "CREATE TABLE t (x)"), "it has no alembic_version table"),
}


@pytest.mark.parametrize("kind", sorted(NOT_QUIZBOT))
def test_a_file_that_is_not_a_quizbot_database_is_refused_and_nothing_changes(
    live: Path, tmp_path: Path, kind: str
) -> None:
    make, message = NOT_QUIZBOT[kind]
    before = tables(live)
    candidate = make(tmp_path / "candidate.db")
    with pytest.raises(StorageError) as info:
        restore(url(live), candidate)
    assert message in str(info.value)
    assert tables(live) == before and before == set(Base.metadata.tables) | {"alembic_version"}
    assert not list(tmp_path.glob("quizbot.db.before-restore-*"))


def test_a_quizbot_database_with_an_extra_or_a_changed_table_is_refused(
    live: Path, tmp_path: Path
) -> None:
    extra = migrated(tmp_path / "extra.db")
    sql(extra, "CREATE TABLE notes (x)")
    with pytest.raises(StorageError, match="tables quizbot does not create notes"):
        restore(url(live), extra)
    changed = migrated(tmp_path / "changed.db")
    sql(changed, "ALTER TABLE scores ADD COLUMN bonus INTEGER")
    with pytest.raises(StorageError, match="other columns in scores"):
        restore(url(live), changed)


def test_restore_saves_the_replaced_database_and_says_where(live: Path, tmp_path: Path) -> None:
    backup_file = migrated(tmp_path / "backup.db")
    done = restore(url(live), backup_file, now=datetime(2027, 3, 1, 9, 30, tzinfo=UTC))
    assert done.previous == tmp_path / "quizbot.db.before-restore-20270301T093000Z"
    assert done.revision == done.head == head_revision()
    saved = sqlite3.connect(done.previous)
    assert saved.execute("SELECT channel FROM channels").fetchall() == [("C",)]
    saved.close()
    restored = sqlite3.connect(live)
    assert restored.execute("SELECT count(*) FROM channels").fetchone() == (0,)
    restored.close()


def test_an_older_quizbot_database_is_restored_and_upgraded_later(
    live: Path, tmp_path: Path
) -> None:
    old = migrated(tmp_path / "old.db", "0003")
    done = restore(url(live), old)
    assert (done.revision, done.head) == ("0003", head_revision())
    assert tables(live) == set(expected_schema("0003"))


def restore_command(live: Path, backup_file: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUIZBOT_")}
    env["QUIZBOT_DATABASE_URL"] = url(live)
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "db", "restore", str(backup_file)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_restore_command_answers_a_directory_in_one_line(live: Path, tmp_path: Path) -> None:
    done = restore_command(live, directory(tmp_path / "dir.db"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"quizbot: error: {str(tmp_path / 'dir.db')!r} is a directory; pass the file that "
        "`quizbot db backup PATH` wrote"
    ]
    good = migrated(tmp_path / "good.db")
    done = restore_command(live, good)
    assert done.returncode == 0, done.stderr
    assert f"restored {good} (schema revision {head_revision()})" in done.stdout
    assert "the database it replaced was saved to " in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["foreign", "directory"])
def test_a_refused_restore_costs_under_200_mb(live: Path, tmp_path: Path, kind: str) -> None:
    candidate = tmp_path / "candidate.db"
    if kind == "foreign":
        foreign_db(candidate, "0005")
    else:
        candidate.mkdir()
    measured = measure(
        "from bot.errors import StorageError\nfrom storage.backup import restore\n"
        "import storage.restore_check as c\nc.known_revisions()\n",
        f"""
        try:
            restore({url(live)!r}, __import__("pathlib").Path({str(candidate)!r}))
        except StorageError as exc:
            return str(exc)
        return "accepted"
        """,
    )
    assert_bounded(measured)
    assert "is a directory" in measured.out or "missing tables" in measured.out
