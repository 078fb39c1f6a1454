"""The storage the scheduler needs (implemented by `storage.schedules`)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bot.domain import ChannelRef, ChannelSettings, DemoPolicy, Locale, Post, Schedule


@dataclass(frozen=True, slots=True)
class SlotClaim:
    """One scheduled post to claim: the (schedule, slot) and the question picked for it."""

    schedule_id: int
    slot_at: datetime
    closes_at: datetime
    question_id: str
    question_hash: str
    correct_choice: int
    choice_count: int
    locale: Locale


class ScheduleStore(Protocol):
    """Schedules, plus the few post queries the reconciler needs."""

    async def add(
        self,
        channel: ChannelRef,
        *,
        timezone: str,
        local_time: str | None,
        weekdays: str | None,
        cron: str | None,
        window_seconds: int | None,
        demo_policy: DemoPolicy,
        created_by: str,
        created_at: datetime,
    ) -> Schedule: ...

    async def get(self, schedule_id: int) -> Schedule | None: ...

    async def enabled(self) -> list[Schedule]:
        """Every enabled schedule, all channels."""
        ...

    async def in_channel(self, channel: ChannelRef) -> list[Schedule]:
        """The channel's enabled schedules, oldest first."""
        ...

    async def disable(self, channel: ChannelRef, schedule_id: int | None = None) -> list[int]:
        """Turn off one schedule of the channel (or all of them); the ids turned off."""
        ...

    async def enabled_among(self, ids: Collection[int]) -> set[int]: ...

    async def fingerprint(self) -> tuple[int, int, int]:
        """Changes whenever a schedule is added or turned off (count, sum, max of ids)."""
        ...

    async def watermarks(self, ids: Collection[int] | None = None) -> dict[int, datetime]:
        """Per enabled schedule: its newest claimed slot, or its creation time if none.
        Slots after the watermark have not been claimed by anyone."""
        ...

    async def claim_inputs(
        self, schedule_ids: Collection[int]
    ) -> dict[int, tuple[ChannelSettings, list[str]]]:
        """Per schedule: its channel's settings and question history (ids, newest first,
        as `PostRepository.history` gives them), in a few queries for many channels."""
        ...

    async def claim_slots(self, claims: Collection[SlotClaim], at: datetime) -> list[Post]:
        """Claim many slots at once (state CLAIMED). The UNIQUE (schedule_id, slot_at)
        decides: only the posts this call created are returned."""
        ...

    async def due(self, now: datetime, platforms: Collection[str], limit: int = 100) -> list[Post]:
        """Open posts on these platforms whose close time has passed, earliest first."""
        ...

    async def lease_unsent(
        self, now: datetime, stale_before: datetime, platforms: Collection[str], limit: int = 100
    ) -> list[Post]:
        """Claimed posts never sent, whose claim (or last lease) is older than
        ``stale_before``: each returned post is leased to the caller (a conditional update),
        so two reconcilers never send the same one."""
        ...

    async def abandon_unsent(self, post_id: int, at: datetime) -> bool:
        """Close a claimed, never-sent post whose window is over (no reveal)."""
        ...

    async def next_deadlines(self) -> tuple[datetime | None, datetime | None]:
        """(the earliest close time of an open post, the oldest claim or lease of an unsent
        post) -- for stepping a fake clock from event to event."""
        ...


__all__ = ["ScheduleStore", "SlotClaim"]
