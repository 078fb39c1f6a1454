"""Online backup and restore of the embedded SQLite database.

SQLite's backup API copies a consistent snapshot while the bot keeps writing (WAL mode
lets readers and one writer proceed). PostgreSQL deployments use `pg_dump`/`pg_restore`.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import make_url

from bot.errors import StorageError
from storage.engine import head_revision
from storage.restore_check import check_backup_file


def sqlite_path(url: str) -> Path:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        raise StorageError(
            "quizbot db backup/restore handle the embedded SQLite database; for PostgreSQL "
            "use pg_dump / pg_restore (see docs/operations.md)"
        )
    if not parsed.database or parsed.database == ":memory:":
        raise StorageError("the SQLite database is in memory: there is no file to back up")
    return Path(parsed.database)


def backup(url: str, target: Path) -> int:
    """Copy a consistent snapshot of the database to `target`; returns its page count."""
    source = sqlite_path(url)
    if not source.exists():
        raise StorageError(f"no database at {str(source)!r}: nothing to back up")
    if target.exists():
        raise StorageError(f"{str(target)!r} exists; choose a new file name for the backup")
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)
    dst = sqlite3.connect(target)
    try:
        with dst:
            # One step: in WAL mode it blocks no writer, while a stepped backup restarts
            # whenever the source is written to, and may never finish under load.
            src.backup(dst)
        pages: int = dst.execute("PRAGMA page_count").fetchone()[0]
        _check(dst, target)
    finally:
        dst.close()
        src.close()
    return pages


@dataclass(frozen=True, slots=True)
class Restored:
    """What `restore` did: the revision put in place, and where the old file went."""

    revision: str
    head: str | None
    previous: Path | None  # a copy of the database that was replaced, if there was one


def restore(url: str, backup_file: Path, *, now: datetime | None = None) -> Restored:
    """Replace the database's content with a backup (stop the bot first).

    Only a quizbot database at a known revision with the expected tables is accepted
    (`storage.restore_check`); the current database is copied aside first.
    """
    target = sqlite_path(url)
    if target.exists() and backup_file.exists() and target.samefile(backup_file):
        raise StorageError(f"{str(backup_file)!r} is the database itself; pass a backup file")
    revision = check_backup_file(backup_file)
    previous: Path | None = None
    if target.exists() and target.stat().st_size > 0:
        stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
        previous = target.with_name(f"{target.name}.before-restore-{stamp}")
        backup(url, previous)
    src = sqlite3.connect(f"file:{backup_file}?mode=ro", uri=True)
    try:
        dst = sqlite3.connect(target, timeout=30)
        try:
            with dst:
                src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()
    return Restored(revision, head_revision(), previous)


def _check(conn: sqlite3.Connection, path: Path) -> None:
    try:
        status = conn.execute("PRAGMA integrity_check").fetchone()[0]
        conn.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.DatabaseError as exc:
        raise StorageError(f"{str(path)!r} is not a quizbot database: {exc}") from exc
    if status != "ok":
        raise StorageError(f"{str(path)!r} failed SQLite's integrity check: {status}")
