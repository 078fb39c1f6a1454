"""The per-test reset of the session's PostgreSQL database: every table the models define.

Derived from the models' metadata, so a table added with its model is emptied without
anyone remembering to list it (`tests/storage/test_database_reset.py` holds it to that).
"""

from __future__ import annotations

from storage.models import Base

VERSION_TABLE = "alembic_version"  # the migrations' own record: kept, or nothing is migrated


def reset_tables() -> list[str]:
    """The tables the reset empties: the models' tables, children before parents."""
    tables = reversed(Base.metadata.sorted_tables)
    return [t.name for t in tables if t.name != VERSION_TABLE]


RESET = "TRUNCATE {} RESTART IDENTITY CASCADE".format(", ".join(f'"{t}"' for t in reset_tables()))


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
