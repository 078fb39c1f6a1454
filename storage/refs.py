"""Resolving platform references (channels, members) to row ids, with a small cache.

The cache is filled only from committed rows (`on_commit`): an id read in a transaction
that rolled back would name a row that does not exist, and every later batch using it
would fail.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, case, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.domain import ChannelRef, Platform, UserRef
from storage._session import on_commit
from storage._sql import insert
from storage.models import ChannelRow, MemberRow


def channel_ref(row: ChannelRow) -> ChannelRef:
    return ChannelRef(Platform(row.platform), row.workspace, row.channel)


def is_channel(channel: ChannelRef) -> tuple[ColumnElement[bool], ...]:
    """The conditions that select `channel`'s row."""
    return (
        ChannelRow.platform == str(channel.platform),
        ChannelRow.workspace == channel.workspace,
        ChannelRow.channel == channel.channel,
    )


def is_member(user: UserRef) -> tuple[ColumnElement[bool], ...]:
    """The conditions that select `user`'s member row."""
    return (
        MemberRow.platform == str(user.platform),
        MemberRow.workspace == user.workspace,
        MemberRow.user_id == user.user,
    )


def user_ref(row: MemberRow) -> UserRef:
    return UserRef(Platform(row.platform), row.workspace, row.user_id, row.display_name)


@dataclass(frozen=True, slots=True)
class ChannelDefaults:
    """What a channel starts with (QUIZBOT_LOCALE, QUIZBOT_TIMEZONE)."""

    locale: str = "en"
    timezone: str = "UTC"


class RefResolver:
    """Maps `ChannelRef`/`UserRef` to ids. Rows are created on first sight; ids are cached
    once the transaction that read them has committed."""

    def __init__(self, dialect: str, defaults: ChannelDefaults | None = None) -> None:
        self._dialect = dialect
        self.defaults = defaults or ChannelDefaults()
        self._channels: dict[ChannelRef, int] = {}
        self._members: dict[tuple[str, str, str], int] = {}
        self._names: dict[int, str] = {}

    async def channel_id(self, session: AsyncSession, ref: ChannelRef, now: datetime) -> int:
        if (cid := self._channels.get(ref)) is not None:
            return cid
        stmt = (
            insert(self._dialect, ChannelRow)
            .values(
                platform=str(ref.platform),
                workspace=ref.workspace,
                channel=ref.channel,
                locale=self.defaults.locale,
                timezone=self.defaults.timezone,
                demo_policy="auto",
                created_at=now,
            )
            .on_conflict_do_nothing()
        )
        await session.execute(stmt)
        cid = (
            await session.execute(
                select(ChannelRow.id).where(
                    *is_channel(ref),
                )
            )
        ).scalar_one()
        on_commit(session, lambda: self._channels.__setitem__(ref, cid))
        return cid

    async def resolve_members(
        self, sessions: async_sessionmaker[AsyncSession], users: Iterable[UserRef]
    ) -> dict[str, int]:
        """Ids by `UserRef.key`, from the cache when it knows them all, else in a
        transaction of their own (committed before anyone uses the ids)."""
        users = list(users)
        cached = self.cached_members(users)
        if cached is not None:
            return cached
        async with sessions.begin() as s:
            return await self.member_ids(s, users)

    def cached_members(self, users: Iterable[UserRef]) -> dict[str, int] | None:
        """Ids by `UserRef.key` when the cache knows every user (and their name), else
        None. A cached id may name a row another replica has since erased (a tombstone):
        the answer writer checks (`storage.erasures.refused_clicks`)."""
        out: dict[str, int] = {}
        for u in users:
            mid = self._members.get((u.platform, u.workspace, u.user))
            if mid is None or (u.name and self._names.get(mid) != u.name):
                return None
            out[u.key] = mid
        return out

    async def member_ids(self, session: AsyncSession, users: Iterable[UserRef]) -> dict[str, int]:
        """Ids by `UserRef.key`; creates missing members and refreshes changed names."""
        wanted = {u.key: u for u in users}
        out: dict[str, int] = {}
        missing: list[UserRef] = []
        for key, u in wanted.items():
            mid = self._members.get((u.platform, u.workspace, u.user))
            if mid is None or (u.name and self._names.get(mid) != u.name):
                missing.append(u)
            else:
                out[key] = mid
        if not missing:
            return out
        ins = insert(self._dialect, MemberRow)
        # Every row comes back (one statement, no second query for the ids): the update
        # keeps a known name when the click carries none.
        stmt = ins.on_conflict_do_update(
            index_elements=["platform", "workspace", "user_id"],
            set_={
                "display_name": case(
                    (ins.excluded.display_name != "", ins.excluded.display_name),
                    else_=MemberRow.display_name,
                )
            },
        ).returning(MemberRow.id, MemberRow.platform, MemberRow.workspace, MemberRow.user_id)
        params = [
            {
                "platform": str(u.platform),
                "workspace": u.workspace,
                "user_id": u.user,
                "display_name": u.name,
            }
            for u in missing
        ]
        # Sorted: concurrent writers (other replicas) lock member rows in one global order,
        # so their upserts cannot deadlock. executemany with RETURNING: batched statements.
        params.sort(key=lambda p: (p["platform"], p["workspace"], p["user_id"]))
        rows = await session.execute(stmt, params)
        found: list[tuple[tuple[str, str, str], int, str]] = []
        for mid, platform, workspace, user_id in rows:
            u = wanted[UserRef(Platform(platform), workspace, user_id).key]
            found.append(((platform, workspace, user_id), mid, u.name))
            out[u.key] = mid
        on_commit(session, lambda: self._remember(found))
        return out

    def _remember(self, found: list[tuple[tuple[str, str, str], int, str]]) -> None:
        for key, mid, name in found:
            self._members[key] = mid
            self._names[mid] = name

    def drop_member(self, platform: str, workspace: str, user_id: str) -> None:
        """Forget one member's cached id (they were erased: their row is anonymous now)."""
        mid = self._members.pop((platform, workspace, user_id), None)
        if mid is not None:
            self._names.pop(mid, None)

    def forget(self) -> None:
        self._channels.clear()
        self._members.clear()
        self._names.clear()
