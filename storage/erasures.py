"""Erasure fences: a member's forget-me wins every race with their clicks in flight.

A click is stamped when it arrives (`at`) and may still wait in an answer writer's queue,
or be inside its transaction on another replica, while the member's `/quiz forget-me`
runs. Every erasure writes a fence — (platform, workspace, user id, erased_at) in
`erasures` — in its own transaction, whether the member had a row or not (their first
clicks may still be queued). The answer writer refuses (`AnswerStatus.ERASED`) every
click of that user stamped at or before the fence and never creates their member row
for one; a click stamped after it makes them a new member.

Both sides hold one lock while they look: on PostgreSQL a transaction-scoped advisory
lock on the member's stripe (one of `STRIPES`), exclusive in the erasure and shared in
the writer's transactions, always taken first (advisory, then post rows, then channel
rows: the close's order after it), so an erasure waits for the batches already past the
check and every later batch sees its fence. Stripes rather than one lock per member: a
batch of 2,000 clicks takes at most 64 locks, well inside PostgreSQL's lock table
(``max_locks_per_transaction``), and an erasure holds up 1/64 of the clicks for its few
milliseconds. SQLite needs nothing: every transaction is ``BEGIN IMMEDIATE``.

A fence is kept `FENCE_RETENTION` (an hour: a queued click waits seconds at most) and
purged by later erasures; it holds the member's platform id, nothing else.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Final

from sqlalchemy import case, delete, select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.domain import UserRef
from storage._sql import insert
from storage.models import ErasureRow, MemberRow
from storage.refs import RefResolver

FENCE_RETENTION: Final = timedelta(hours=1)
STRIPES: Final = 64
_LOCKS: Final = 0x51554932  # the advisory locks' namespace (their first int4 key)
_PURGE: Final = -1  # the second key of the purge's lock (stripes are 0..63)

MemberKey = tuple[str, str, str]  # platform, workspace, user id: the members row's key


def member_key(user: UserRef) -> MemberKey:
    return (str(user.platform), user.workspace, user.user)


def stripe(key: MemberKey) -> int:
    """The member's lock stripe: the same on every replica and Python process."""
    digest = hashlib.blake2b("\0".join(key).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % STRIPES


async def lock_members(
    s: AsyncSession, dialect: str, keys: Iterable[MemberKey], *, exclusive: bool = False
) -> None:
    """Take the members' stripes for this transaction: shared (the answer writer) or
    exclusive (an erasure); ascending, in one statement. No-op on SQLite."""
    if dialect != "postgresql":
        return
    stripes = sorted({stripe(k) for k in keys})
    if not stripes:
        return
    fn = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
    # Ints of our own (0..63), inlined: PostgreSQL evaluates a select list left to right.
    await s.execute(text("SELECT " + ", ".join(f"{fn}({_LOCKS}, {n})" for n in stripes)))


async def fences(s: AsyncSession, keys: Iterable[MemberKey]) -> dict[MemberKey, datetime]:
    """The fence of each member of `keys` that has one."""
    wanted = set(keys)
    if not wanted:
        return {}
    # Erasures are rare and their fences kept an hour: when there is none at all, one
    # probe answers for the whole batch (read after the stripes, as the full query is).
    if (await s.execute(select(ErasureRow.user_id).limit(1))).first() is None:
        return {}
    rows = await s.execute(
        select(
            ErasureRow.platform, ErasureRow.workspace, ErasureRow.user_id, ErasureRow.erased_at
        ).where(ErasureRow.user_id.in_(sorted({k[2] for k in wanted})))
    )
    return {
        (platform, workspace, user_id): at
        for platform, workspace, user_id, at in rows
        if (platform, workspace, user_id) in wanted
    }


async def write_fence(s: AsyncSession, dialect: str, key: MemberKey, at: datetime) -> None:
    """Fence `key` at `at` (a later fence of an earlier erasure stays)."""
    platform, workspace, user_id = key
    stmt = insert(dialect, ErasureRow).values(
        platform=platform, workspace=workspace, user_id=user_id, erased_at=at
    )
    await s.execute(
        stmt.on_conflict_do_update(
            index_elements=["platform", "workspace", "user_id"],
            set_={
                "erased_at": case(
                    (stmt.excluded.erased_at > ErasureRow.erased_at, stmt.excluded.erased_at),
                    else_=ErasureRow.erased_at,
                )
            },
        )
    )


async def purge_fences(s: AsyncSession, dialect: str, before: datetime) -> None:
    """Delete fences older than `before`. On PostgreSQL one erasure purges at a time (a
    lock tried, never waited for: two purges could otherwise deadlock on the rows)."""
    if dialect == "postgresql":
        got = await s.execute(text(f"SELECT pg_try_advisory_xact_lock({_LOCKS}, {_PURGE})"))
        if not got.scalar_one():
            return
    await s.execute(delete(ErasureRow).where(ErasureRow.erased_at < before))


# -- the answer writer's side ------------------------------------------------------------


class StaleMemberIds(Exception):
    """A cached member id named a row that is not that member any more (erased on
    another replica): the ids were dropped from the cache; resolve them again."""


def _fenced(fence: datetime | None, at: datetime) -> bool:
    return fence is not None and at <= fence


async def writer_member_ids(
    sessions: async_sessionmaker[AsyncSession],
    refs: RefResolver,
    dialect: str,
    clicks: Sequence[tuple[UserRef, datetime]],
) -> dict[str, int]:
    """Member ids for a batch of (user, received at) clicks, by `UserRef.key`: from the
    cache when it knows them all, else upserted in a transaction of their own under the
    members' shared stripes, leaving out every member whose clicks are all fenced (no row
    is created for a click an erasure refused)."""
    users = [u for u, _ in clicks]
    cached = refs.cached_members(users)
    if cached is not None:
        return cached
    latest: dict[MemberKey, datetime] = {}
    for u, at in clicks:
        key = member_key(u)
        latest[key] = max(at, latest.get(key, at))
    async with sessions.begin() as s:
        await lock_members(s, dialect, latest)
        fenced = await fences(s, latest)
        wanted = [u for u in users if not _fenced(fenced.get(member_key(u)), latest[member_key(u)])]
        return await refs.member_ids(s, wanted) if wanted else {}


async def refused_clicks(
    s: AsyncSession,
    dialect: str,
    refs: RefResolver,
    clicks: Sequence[tuple[UserRef, datetime]],
    member_ids: dict[str, int],
) -> set[int]:
    """In the answers transaction, before any post row: take the members' shared stripes
    and return the indexes of the clicks an erasure fenced. Every other click's member id
    must name that member's own row; a tombstone (or a row gone) raises `StaleMemberIds`
    with the cache entry dropped, so the batch resolves it again."""
    keys = {member_key(u) for u, _ in clicks}
    await lock_members(s, dialect, keys)
    fenced = await fences(s, keys)
    refused = {i for i, (u, at) in enumerate(clicks) if _fenced(fenced.get(member_key(u)), at)}
    kept = {member_key(u): u for i, (u, _) in enumerate(clicks) if i not in refused}
    ids = {key: member_ids.get(u.key) for key, u in kept.items()}
    found = {
        mid: (platform, workspace, user_id)
        for mid, platform, workspace, user_id in await s.execute(
            select(MemberRow.id, MemberRow.platform, MemberRow.workspace, MemberRow.user_id).where(
                MemberRow.id.in_(sorted({mid for mid in ids.values() if mid is not None}))
            )
        )
    }
    stale = [key for key, mid in ids.items() if mid is None or found.get(mid) != key]
    if stale:
        for key in stale:
            refs.drop_member(*key)
        raise StaleMemberIds(f"{len(stale)} member ids named erased rows")
    return refused


__all__ = [
    "FENCE_RETENTION",
    "STRIPES",
    "MemberKey",
    "StaleMemberIds",
    "fences",
    "lock_members",
    "member_key",
    "purge_fences",
    "refused_clicks",
    "stripe",
    "write_fence",
    "writer_member_ids",
]
