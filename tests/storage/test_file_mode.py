"""The embedded SQLite file is readable by its owner only: demos run as other users on
the same host (docs/runner.md)."""

from __future__ import annotations

import stat
from pathlib import Path

from storage.store import SqlStore


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_a_new_sqlite_file_and_its_wal_are_private(tmp_path: Path) -> None:
    database = tmp_path / "quizbot.db"
    async with SqlStore(f"sqlite+aiosqlite:///{database}", migrate=True) as store:
        await store.ping()
        assert mode(database) == 0o600
        assert mode(Path(f"{database}-wal")) == 0o600


async def test_an_existing_file_readable_by_others_is_narrowed_to_its_owner(
    tmp_path: Path,
) -> None:
    database = tmp_path / "quizbot.db"
    async with SqlStore(f"sqlite+aiosqlite:///{database}", migrate=True):
        pass
    database.chmod(0o644)
    async with SqlStore(f"sqlite+aiosqlite:///{database}") as store:
        await store.ping()
    assert mode(database) == 0o600
