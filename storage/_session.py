"""The store's session class, with work that waits for a commit.

Caches of row ids (channels, members) must hold only rows that exist: an id read inside a
transaction that then rolls back (a deadlock, a dropped connection, one bad click) names a
row nobody will ever see. `after_commit` runs what a transaction staged once it committed;
a rollback drops it.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session

_ON_COMMIT = "quizbot.on_commit"


class StoreSession(Session):
    """A `Session` whose `after_commit` hooks are staged per transaction (`on_commit`)."""


def on_commit(session: AsyncSession | Session, work: Callable[[], None]) -> None:
    """Run `work` after the current transaction of `session` commits; never if it rolls back."""
    sync = session.sync_session if isinstance(session, AsyncSession) else session
    sync.info.setdefault(_ON_COMMIT, []).append(work)


@event.listens_for(StoreSession, "after_commit")
def _run_staged(session: Session) -> None:
    for work in session.info.pop(_ON_COMMIT, ()):
        work()


@event.listens_for(StoreSession, "after_rollback")
def _drop_staged(session: Session) -> None:
    session.info.pop(_ON_COMMIT, None)


def sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False, sync_session_class=StoreSession)


__all__ = ["StoreSession", "on_commit", "sessionmaker"]
