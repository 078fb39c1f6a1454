"""Resolving platform references (channels, members) to row ids, with a small cache."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from bot.domain import ChannelRef, Platform, UserRef
from storage._sql import insert
from storage.models import ChannelRow, MemberRow


@dataclass(frozen=True, slots=True)
class ChannelDefaults:
    """What a channel starts with (QUIZBOT_LOCALE, QUIZBOT_TIMEZONE)."""

    locale: str = "en"
    timezone: str = "UTC"


class RefResolver:
    """Maps `ChannelRef`/`UserRef` to ids. Rows are created on first sight and never deleted,
    so ids can be cached for the life of the process."""

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
                    ChannelRow.platform == str(ref.platform),
                    ChannelRow.workspace == ref.workspace,
                    ChannelRow.channel == ref.channel,
                )
            )
        ).scalar_one()
        self._channels[ref] = cid
        return cid

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
        stmt = ins.on_conflict_do_update(
            index_elements=["platform", "workspace", "user_id"],
            set_={"display_name": ins.excluded.display_name},
            where=ins.excluded.display_name != "",
        )
        params = [
            {
                "platform": str(u.platform),
                "workspace": u.workspace,
                "user_id": u.user,
                "display_name": u.name,
            }
            for u in missing
        ]
        # executemany form: one cached statement, whatever the batch size.
        await session.execute(stmt, params)
        rows = await session.execute(
            select(MemberRow.id, MemberRow.platform, MemberRow.workspace, MemberRow.user_id).where(
                tuple_(MemberRow.platform, MemberRow.workspace, MemberRow.user_id).in_(
                    [(str(u.platform), u.workspace, u.user) for u in missing]
                )
            )
        )
        for mid, platform, workspace, user_id in rows:
            self._members[(platform, workspace, user_id)] = mid
            u = wanted[UserRef(Platform(platform), workspace, user_id).key]
            self._names[mid] = u.name
            out[u.key] = mid
        return out

    def forget(self) -> None:
        self._channels.clear()
        self._members.clear()
        self._names.clear()
