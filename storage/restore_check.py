"""Is this file a quizbot database that `quizbot db restore` may put in place?

A restore replaces every table, so the file must be an SQLite database written by
quizbot: at a revision of this code's migrations, holding exactly the tables and columns
those migrations create up to that revision. The expected schema is not written down a
second time: the migrations are run on an empty in-memory database to that revision and
the two are compared.
"""

from __future__ import annotations

import sqlite3
from functools import cache
from pathlib import Path

from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine
from sqlalchemy.pool import StaticPool

from bot.errors import StorageError
from bot.quoting import cut
from storage.engine import alembic_config

SQLITE_HEADER = b"SQLite format 3\x00"
# Schema = {table: (column, ...)}; SQLite's own tables (sqlite_sequence, ...) are left out.
Schema = dict[str, tuple[str, ...]]


def known_revisions() -> list[str]:
    """This code's migration revisions, oldest first."""
    script = ScriptDirectory.from_config(alembic_config())
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


@cache
def expected_schema(revision: str) -> Schema:
    """The tables and columns the migrations create up to ``revision``."""
    engine = create_engine("sqlite://", poolclass=StaticPool)
    try:
        with engine.begin() as conn:
            cfg = alembic_config()
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
        raw = engine.raw_connection()
        try:
            return schema_of(raw.driver_connection)  # type: ignore[arg-type]
        finally:
            raw.close()
    finally:
        engine.dispose()


def schema_of(conn: sqlite3.Connection) -> Schema:
    names = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    schema: Schema = {}
    for (name,) in names:
        columns = conn.execute("SELECT name FROM pragma_table_info(?)", (name,)).fetchall()
        schema[name] = tuple(sorted(column for (column,) in columns))
    return schema


def check_backup_file(path: Path) -> str:
    """The revision of the quizbot database at ``path``; `StorageError` names what is wrong."""
    shown = repr(str(path))
    if path.is_dir():
        raise StorageError(
            f"{shown} is a directory; pass the file that `quizbot db backup PATH` wrote"
        )
    if not path.exists():
        raise StorageError(f"no backup at {shown}")
    with path.open("rb") as f:
        header = f.read(len(SQLITE_HEADER))
    if header != SQLITE_HEADER:
        raise StorageError(
            f"{shown} is not a quizbot database: it is not an SQLite file; pass the file "
            "that `quizbot db backup PATH` wrote"
        )
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return _check(conn, shown)
    except sqlite3.DatabaseError as exc:
        raise StorageError(f"{shown} is not a quizbot database: {exc}") from exc
    finally:
        conn.close()


def _check(conn: sqlite3.Connection, shown: str) -> str:
    status = conn.execute("PRAGMA integrity_check").fetchone()[0]
    if status != "ok":
        raise StorageError(f"{shown} failed SQLite's integrity check: {cut(str(status))}")
    schema = schema_of(conn)
    if "alembic_version" not in schema:
        raise StorageError(
            f"{shown} is not a quizbot database: it has no alembic_version table "
            f"({len(schema)} other tables)"
        )
    rows = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    if len(rows) != 1:
        raise StorageError(
            f"{shown} is not a quizbot database: alembic_version holds {len(rows)} rows, not 1"
        )
    revision = str(rows[0][0])
    known = known_revisions()
    if revision not in known:
        raise StorageError(
            f"{shown} is at schema revision {cut(revision, 40)!r}, which this quizbot does not "
            f"know (it knows {known[0]}..{known[-1]}): it was written by a newer quizbot "
            "(install that version to restore it) or by another application"
        )
    _compare(schema, expected_schema(revision), shown, revision)
    return revision


def _compare(found: Schema, expected: Schema, shown: str, revision: str) -> None:
    missing = sorted(set(expected) - set(found))
    extra = sorted(set(found) - set(expected))
    changed = sorted(t for t in set(found) & set(expected) if found[t] != expected[t])
    if not (missing or extra or changed):
        return
    parts = []
    if missing:
        parts.append(f"missing tables {_names(missing)}")
    if extra:
        parts.append(f"tables quizbot does not create {_names(extra)}")
    if changed:
        parts.append(f"other columns in {_names(changed)}")
    raise StorageError(
        f"{shown} is not a quizbot database at revision {revision}: "
        f"{'; '.join(parts)}. Restore a file written by `quizbot db backup`"
    )


def _names(tables: list[str]) -> str:
    shown = ", ".join(cut(t, 40) for t in tables[:5])
    return shown + (f" and {len(tables) - 5} more" if len(tables) > 5 else "")


__all__ = ["check_backup_file", "expected_schema", "known_revisions", "schema_of"]
