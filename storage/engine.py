"""Engines, database URLs and migrations."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry

from bot.errors import StorageError
from bot.quoting import cut

log = logging.getLogger(__name__)

DEFAULT_SQLITE_FILE = "quizbot.db"
MIGRATIONS = Path(__file__).parent / "migrations"


def default_url(cwd: Path | None = None) -> str:
    """The embedded default: a SQLite file under the working directory."""
    return f"sqlite+aiosqlite:///{(cwd or Path.cwd()) / DEFAULT_SQLITE_FILE}"


def normalize_url(url: str) -> str:
    """Accept the URLs people paste (``postgres://``, ``sqlite:///x``) and pick async drivers."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        shown = _masked(url)
        if "://" not in url and "@" not in url:  # a file path: the SQLite URL of that file
            raise StorageError(
                f"QUIZBOT_DATABASE_URL {shown!r} is not a database URL; for that SQLite "
                f"file use sqlite+aiosqlite:///{url.strip()} (or unset it for ./quizbot.db)"
            ) from exc
        raise StorageError(
            f"QUIZBOT_DATABASE_URL {shown!r} is not a database URL; "
            "use e.g. sqlite+aiosqlite:///./quizbot.db or postgresql+asyncpg://user@host/db"
        ) from exc
    backend = parsed.get_backend_name()
    if backend in ("postgres", "postgresql"):
        parsed = parsed.set(drivername="postgresql+asyncpg")
    elif backend == "sqlite":
        parsed = parsed.set(drivername="sqlite+aiosqlite")
    else:
        raise StorageError(
            f"QUIZBOT_DATABASE_URL uses {backend!r}; quizbot supports sqlite and postgresql"
        )
    return parsed.render_as_string(hide_password=False)


def _masked(text: str) -> str:
    """What was typed, cut short, with anything between a ``user:`` and an ``@`` hidden: a
    value SQLAlchemy cannot parse may still hold a password."""
    return cut(re.sub(r"(:)[^:@/]*(@)", r"\1***\2", text.strip()), 80)


def redact(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable URL>"


def create_engine(url: str, **kwargs: Any) -> AsyncEngine:
    url = normalize_url(url)
    if url.startswith("sqlite"):
        path = make_url(url).database
        if path and path != ":memory:":
            parent = Path(path).parent
            if not parent.exists():
                raise StorageError(
                    f"cannot open the SQLite database {path!r}: directory {str(parent)!r} "
                    "does not exist; create it or set QUIZBOT_DATABASE_URL to another file"
                )
            _private_file(Path(path))
        engine = create_async_engine(url, connect_args={"timeout": 30}, **kwargs)
        _sqlite_pragmas(engine)
        return engine
    kwargs.setdefault("pool_size", 10)
    kwargs.setdefault("max_overflow", 10)
    kwargs.setdefault("pool_pre_ping", True)
    return create_async_engine(url, **kwargs)


def _private_file(path: Path) -> None:
    """The SQLite file readable by its owner only: demos run as other users on the same
    host. SQLite gives its -wal and -shm files the database file's mode."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            with contextlib.suppress(OSError):  # not ours to change: SQLite says so later
                mode = name.stat().st_mode
                if mode & 0o077 and stat.S_ISREG(mode):
                    name.chmod(stat.S_IMODE(mode) & 0o700)
                    log.info("made %s readable by its owner only", name)
    except OSError:
        return  # SQLite reports what is wrong with the path, in its own words
    else:
        os.close(fd)


def _sqlite_pragmas(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def on_connect(dbapi_conn: Any, _: ConnectionPoolEntry) -> None:
        # Take control of transactions so BEGIN IMMEDIATE below is the only BEGIN.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine.sync_engine, "begin")
    def on_begin(conn: Connection) -> None:
        # Writers take the lock up front: a deferred transaction that reads, then writes,
        # can fail with SQLITE_BUSY when another connection wrote in between.
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    """Run Alembic migrations up to `revision` on `engine`."""

    def run(conn: Connection) -> None:
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)

    try:
        async with engine.begin() as conn:
            await conn.run_sync(run)
    except OSError as exc:
        raise StorageError(
            f"cannot reach the database at {redact(str(engine.url))}: {exc}; "
            "check QUIZBOT_DATABASE_URL and that the server is running"
        ) from exc


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


async def check_schema(engine: AsyncEngine) -> None:
    """Refuse to start on a database the migrations have not brought up to date."""
    current, head = await current_revision(engine), head_revision()
    if current != head:
        raise StorageError(
            f"the database {redact(str(engine.url))} is at schema revision {current or 'none'}, "
            f"this version needs {head}: run `quizbot db upgrade` first"
        )


async def current_revision(engine: AsyncEngine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    def get(conn: Connection) -> str | None:
        return MigrationContext.configure(conn).get_current_revision()

    async with engine.connect() as conn:
        return await conn.run_sync(get)
