"""Small SQL helpers shared by the repositories (dialect-aware upserts, row mapping)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import DeclarativeBase


def insert(dialect: str, model: type[DeclarativeBase]) -> Any:
    """An INSERT that supports ``on_conflict_do_*`` on PostgreSQL and SQLite."""
    if dialect == "postgresql":
        return postgresql.insert(model)
    return sqlite.insert(model)
