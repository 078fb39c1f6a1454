"""Alembic environment: runs on the connection quizbot hands over (see storage.engine)."""

from __future__ import annotations

from alembic import context

from storage.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `quizbot db upgrade` (storage.engine.upgrade)")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
