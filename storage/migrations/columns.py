"""Builders the migrations share: column types, columns, keys and lightweight tables.

Migrations are applied history, so what a builder here emits must never change: a change
would give a new database a schema that the databases migrated before it do not have. Add
a builder rather than edit one. `tests/storage/test_schema.py` compares the migrated schema
with the models on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

# 64-bit ids on PostgreSQL; SQLite's INTEGER PRIMARY KEY is its rowid (64-bit already).
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def id_column() -> sa.Column[Any]:
    return sa.Column("id", BIG_ID, autoincrement=True, nullable=False)


def ref(name: str, nullable: bool = True) -> sa.Column[Any]:
    """A column holding another row's id."""
    return sa.Column(name, BIG_ID, nullable=nullable)


def time(name: str, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def fk(table: str, column: str, target: str) -> sa.ForeignKeyConstraint:
    """`table.column` references `target.id`, named as the models' convention names it."""
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=op.f(f"fk_{table}_{column}_{target}")
    )


def lightweight(name: str, **columns: Any) -> sa.TableClause:
    """A table as a data migration sees it: the columns it reads or writes, by type."""
    return sa.table(name, *(sa.column(column, kind) for column, kind in columns.items()))


def counts(*names: str) -> list[sa.Column[Any]]:
    """Non-null integer columns, in this order (points, answers and the like)."""
    return [sa.Column(name, sa.Integer(), nullable=False) for name in names]
