"""Per-channel settings (locale, time zone, demo policy)."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.clock import Clock
from bot.domain import ChannelRef, ChannelSettings, DemoPolicy, Locale
from storage.models import ChannelRow
from storage.refs import RefResolver


class SqlSettingsRepository:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], refs: RefResolver, clock: Clock
    ) -> None:
        self._sessions = sessions
        self._refs = refs
        self._clock = clock

    async def get(self, channel: ChannelRef) -> ChannelSettings:
        async with self._sessions() as s:
            row = (
                await s.execute(
                    select(ChannelRow).where(
                        ChannelRow.platform == str(channel.platform),
                        ChannelRow.workspace == channel.workspace,
                        ChannelRow.channel == channel.channel,
                    )
                )
            ).scalar_one_or_none()
        if row is None:
            d = self._refs.defaults
            return ChannelSettings(channel, Locale(d.locale), d.timezone)
        return ChannelSettings(
            channel, Locale(row.locale), row.timezone, DemoPolicy(row.demo_policy)
        )

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
                )
            )
