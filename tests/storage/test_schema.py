"""Migrations match the models; bad database URLs get a message that names the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Connection

from bot.errors import StorageError
from storage.engine import create_engine, current_revision, normalize_url, upgrade
from storage.models import Base
from storage.store import SqlStore


async def test_migrated_schema_matches_the_models(db_url: str) -> None:
    engine = create_engine(db_url)

    def diff(conn: Connection) -> list[object]:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        return list(compare_metadata(ctx, Base.metadata))

    async with engine.connect() as conn:
        assert await conn.run_sync(diff) == []
    assert await current_revision(engine) is not None
    await engine.dispose()


async def test_embedded_sqlite_file_is_created_and_upgraded_on_first_start(
    tmp_path: Path,
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}"
    async with SqlStore(url, migrate=True) as store:
        assert await current_revision(store.engine) is not None
    async with SqlStore(url, migrate=True) as store:  # a second start changes nothing
        assert await store.ping()
    engine = create_engine(url)
    await upgrade(engine)
    await engine.dispose()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgres://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("postgresql://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("sqlite:///x.db", "sqlite+aiosqlite:///x.db"),
    ],
)
def test_pasted_urls_get_the_async_driver(url: str, expected: str) -> None:
    assert normalize_url(url) == expected


def test_unsupported_or_garbled_url_names_the_variable() -> None:
    with pytest.raises(StorageError, match="QUIZBOT_DATABASE_URL"):
        normalize_url("mysql://root@localhost/db")
    with pytest.raises(StorageError, match="QUIZBOT_DATABASE_URL"):
        normalize_url("not a url")


@pytest.mark.parametrize(
    ("url", "suggestion"),
    [
        ("./quizbot.db", "sqlite+aiosqlite:///./quizbot.db"),
        ("/data/quiz.sqlite", "sqlite+aiosqlite:////data/quiz.sqlite"),
        ("quizbot.db", "sqlite+aiosqlite:///quizbot.db"),
    ],
)
def test_a_file_path_is_echoed_with_the_sqlite_url_to_use(url: str, suggestion: str) -> None:
    with pytest.raises(StorageError) as info:
        normalize_url(url)
    assert f"QUIZBOT_DATABASE_URL {url!r}" in str(info.value)
    assert f"use {suggestion}" in str(info.value)


def test_a_garbled_url_is_echoed_without_its_password() -> None:
    with pytest.raises(StorageError) as info:
        normalize_url("postgres//quiz:hunter2@db:5432/quiz")
    assert "hunter2" not in str(info.value) and "postgres//quiz:***@db:5432/quiz" in str(info.value)


def test_sqlite_file_in_a_missing_directory_is_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="does not exist"):
        create_engine(f"sqlite+aiosqlite:///{tmp_path / 'nope' / 'q.db'}")


async def test_unreachable_postgres_gives_a_storage_error_without_the_password() -> None:
    store = SqlStore("postgresql+asyncpg://quiz:hunter2@127.0.0.1:1/quiz")
    with pytest.raises(StorageError) as info:
        await store.initialize()
    assert "QUIZBOT_DATABASE_URL" in str(info.value)
    assert "hunter2" not in str(info.value)


async def test_a_database_behind_the_migrations_is_refused_with_the_fix(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url)
    await upgrade(engine, "0001")
    await engine.dispose()
    store = SqlStore(url)
    with pytest.raises(StorageError, match=r"quizbot db upgrade"):
        await store.initialize()
    async with SqlStore(url, migrate=True) as upgraded:  # the embedded default upgrades itself
        assert await upgraded.ping()
