"""Small SQL helpers shared by the repositories (their sessions, dialect-aware upserts,
row mapping)."""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import DeclarativeBase

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from storage.refs import RefResolver

T = TypeVar("T", bound="DataclassInstance")


class _Keyed(Protocol):
    """A row with a generated integer primary key, `id`."""

    @property
    def id(self) -> int: ...


def dialect_name(sessions: async_sessionmaker[AsyncSession]) -> str:
    """The SQL dialect of the database `sessions` open ("postgresql", "sqlite")."""
    name: str = sessions.kw["bind"].dialect.name
    return name


class SqlRepository:
    """A repository on `sessions`; `_dialect` names their database's SQL dialect."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions
        self._dialect = dialect_name(sessions)


class RefRepository(SqlRepository):
    """A repository that resolves channels and members to their rows with `refs`."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], refs: RefResolver) -> None:
        super().__init__(sessions)
        self._refs = refs


def insert(dialect: str, model: type[DeclarativeBase]) -> Any:
    """An INSERT that supports ``on_conflict_do_*`` on PostgreSQL and SQLite."""
    if dialect == "postgresql":
        return postgresql.insert(model)
    return sqlite.insert(model)


async def added_id(session: AsyncSession, row: _Keyed) -> int:
    """Add `row` to `session` and flush it: the id the database gave it."""
    session.add(row)
    await session.flush()
    return row.id


def summed(model: Any, ins: Any, *columns: str) -> dict[str, Any]:
    """An upsert's assignments that add the incoming row's `columns` to the stored row's."""
    return {column: getattr(model, column) + getattr(ins.excluded, column) for column in columns}


def from_row(cls: type[T], row: object, **converted: Any) -> T:
    """A domain value from an ORM row: the fields not in `converted` are the row's columns
    of the same name."""
    copied = {name: getattr(row, name) for name in _field_names(cls) if name not in converted}
    return cls(**copied, **converted)


@cache
def _field_names(cls: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))
