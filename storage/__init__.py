"""SQLAlchemy 2.x async storage: models, repositories, Alembic migrations."""

from storage.store import SqlStore

__all__ = ["SqlStore"]
