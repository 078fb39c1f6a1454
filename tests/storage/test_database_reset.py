"""The per-test reset of the PostgreSQL test database empties every table there is."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest
from sqlalchemy import Column, Table, func, insert, inspect, select
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.types import TypeDecorator

from storage.engine import create_engine
from storage.models import Base
from tests.databases import VERSION_TABLE, reset_postgres, reset_tables

SAMPLES: dict[type, object] = {
    bool: False,
    int: 1,
    float: 1.0,
    str: "x",
    date: date(2024, 1, 1),
    datetime: datetime(2024, 1, 1, tzinfo=UTC),
}


def sample(column: Column[Any], inserted: dict[str, dict[str, Any]]) -> object:
    """A value for `column`: the parent row's key for a foreign key, else one of its type."""
    for fk in column.foreign_keys:
        return inserted[fk.column.table.name][fk.column.name]
    kind = column.type
    if isinstance(kind, TypeDecorator):
        kind = kind.impl_instance
    return SAMPLES[kind.python_type]


async def fill_every_table(conn: AsyncConnection) -> dict[str, dict[str, Any]]:
    """One row in every model table, parents first; the database assigns serial ids."""
    inserted: dict[str, dict[str, Any]] = {}
    for table in Base.metadata.sorted_tables:
        serial = table.autoincrement_column
        values = {c.name: sample(c, inserted) for c in table.columns if c is not serial}
        row = (await conn.execute(insert(table).values(values).returning(*table.c))).one()
        inserted[table.name] = dict(row._mapping)
    return inserted


async def counts(conn: AsyncConnection, tables: list[Table]) -> dict[str, int]:
    return {
        t.name: (await conn.execute(select(func.count()).select_from(t))).scalar_one()
        for t in tables
    }


def table_names(conn: Connection) -> set[str]:
    return set(inspect(conn).get_table_names())


@pytest.mark.postgres
async def test_the_reset_empties_every_table_and_restarts_every_id(pg_url: str) -> None:
    tables = Base.metadata.sorted_tables
    engine = create_engine(pg_url)
    try:
        await reset_postgres(pg_url)  # whatever the tests before this one left
        async with engine.begin() as conn:
            # Nothing the migrations create escapes the reset (only their version table).
            assert await conn.run_sync(table_names) == {*reset_tables(), VERSION_TABLE}
            await fill_every_table(conn)
            assert set((await counts(conn, tables)).values()) == {1}

        await reset_postgres(pg_url)

        async with engine.begin() as conn:
            assert await counts(conn, tables) == {t.name: 0 for t in tables}
            again = await fill_every_table(conn)  # the ids start over
            for table in tables:
                if (serial := table.autoincrement_column) is not None:
                    assert again[table.name][serial.name] == 1, table.name
        await reset_postgres(pg_url)  # leave the database as the next test expects it
    finally:
        await engine.dispose()
