"""The per-test reset of the session's PostgreSQL database: every table the models define.

Derived from the models' metadata, so a table added with its model is emptied without
anyone remembering to list it (`tests/storage/test_database_reset.py` holds it to that).
"""

from __future__ import annotations

from alembic import command
from sqlalchemy.engine import Connection

from storage.engine import alembic_config
from storage.models import Base

VERSION_TABLE = "alembic_version"  # the migrations' own record: kept, or nothing is migrated


def reset_tables() -> list[str]:
    """The tables the reset empties: the models' tables, children before parents."""
    tables = reversed(Base.metadata.sorted_tables)
    return [t.name for t in tables if t.name != VERSION_TABLE]


def _reset_statement() -> str:
    """DELETE, not TRUNCATE: on tables this small TRUNCATE's new files cost ~0.2-0.4 s a
    test, DELETE a few ms. Then every serial id starts over, as after a fresh migration."""
    deletes = [f'DELETE FROM "{name}"' for name in reset_tables()]
    serials = [(t.name, t.autoincrement_column) for t in Base.metadata.sorted_tables]
    restarts = [
        f"SELECT setval(pg_get_serial_sequence('\"{table}\"', '{column.name}'), 1, false)"
        for table, column in serials
        if column is not None
    ]
    return "; ".join(deletes + restarts)


RESET = _reset_statement()


def dsn(url: str) -> str:
    """asyncpg's form of a SQLAlchemy URL."""
    return url.replace("postgresql+asyncpg://", "postgresql://")


async def reset_postgres(url: str) -> None:
    """Empty every table and restart every id sequence, keeping the migrated schema."""
    import asyncpg  # the postgres extra: only where a PostgreSQL test runs

    conn = await asyncpg.connect(dsn(url))
    try:
        await conn.execute(RESET)
    finally:
        await conn.close()


def migrate(conn: Connection, revision: str) -> None:
    """Upgrade to `revision` ("head") or downgrade to it (any other), on `conn`."""
    cfg = alembic_config()
    cfg.attributes["connection"] = conn
    if revision == "head":
        command.upgrade(cfg, revision)
    else:
        command.downgrade(cfg, revision)
