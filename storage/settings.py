"""Per-channel settings (locale, time zone, demo policy, packs) and the `/quiz ask` cooldown."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.clock import Clock
from bot.domain import ChannelRef, ChannelSettings, DemoPolicy, Locale
from storage._sql import RefRepository
from storage.models import ChannelRow, TeamPackRow
from storage.refs import RefResolver, channel_ref, is_channel


def same_workspace() -> ColumnElement[bool]:
    """Join a channel to its workspace's team pack row (its revision)."""
    return and_(
        TeamPackRow.platform == ChannelRow.platform, TeamPackRow.workspace == ChannelRow.workspace
    )


def settings_of(row: ChannelRow, revision: int | None) -> ChannelSettings:
    """A channel row as settings; `revision` from `same_workspace()` (None: no pack yet)."""
    return ChannelSettings(
        channel_ref(row),
        Locale(row.locale),
        row.timezone,
        DemoPolicy(row.demo_policy),
        row.generated_share,
        row.builtin_pack,
        row.team_pack,
        revision or 0,
    )


class SqlSettingsRepository(RefRepository):
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], refs: RefResolver, clock: Clock
    ) -> None:
        super().__init__(sessions, refs)
        self._clock = clock

    async def get(self, channel: ChannelRef) -> ChannelSettings:
        async with self._sessions() as s:
            found = (
                await s.execute(
                    select(ChannelRow, TeamPackRow.revision)
                    .outerjoin(TeamPackRow, same_workspace())
                    .where(
                        *is_channel(channel),
                    )
                )
            ).first()
        if found is None:
            d = self._refs.defaults
            return ChannelSettings(channel, Locale(d.locale), d.timezone)
        return settings_of(*found)

    async def save(self, settings: ChannelSettings) -> None:
        async with self._sessions.begin() as s:
            cid = await self._refs.channel_id(s, settings.channel, self._clock.now())
            await s.execute(
                update(ChannelRow)
                .where(ChannelRow.id == cid)
                .values(
                    locale=str(settings.locale),
                    timezone=settings.timezone,
                    demo_policy=str(settings.demo_policy),
                    generated_share=settings.generated_share,
                    builtin_pack=settings.builtin_pack,
                    team_pack=settings.team_pack,
                )
            )

    async def claim_ask(
        self, channel: ChannelRef, now: datetime, cooldown: timedelta
    ) -> timedelta | None:
        """Take the channel's ask cooldown: None when taken (nobody asked within
        `cooldown`), else how long until it frees. One conditional update, so of two
        replicas asking at once exactly one wins."""
        async with self._sessions.begin() as s:
            cid = await self._refs.channel_id(s, channel, now)
            taken = await s.execute(
                update(ChannelRow)
                .where(
                    ChannelRow.id == cid,
                    or_(ChannelRow.last_ask_at.is_(None), ChannelRow.last_ask_at <= now - cooldown),
                )
                .values(last_ask_at=now)
            )
            if taken.rowcount == 1:  # type: ignore[attr-defined]
                return None
            last = (
                await s.execute(select(ChannelRow.last_ask_at).where(ChannelRow.id == cid))
            ).scalar_one()
        if last is None:
            return None
        return max(last + cooldown - now, timedelta(seconds=1))

    async def release_ask(self, channel: ChannelRef, taken_at: datetime) -> None:
        """Give the cooldown back (the ask was refused before anything was posted)."""
        async with self._sessions.begin() as s:
            cid = await self._refs.channel_id(s, channel, taken_at)
            await s.execute(
                update(ChannelRow)
                .where(ChannelRow.id == cid, ChannelRow.last_ask_at == taken_at)
                .values(last_ask_at=None)
            )
