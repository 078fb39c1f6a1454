"""Schedules, and the post queries the scheduler's reconciler needs.

Exactly-once comes from here: a slot is claimed by the posts' UNIQUE(schedule_id, slot_at)
(`SqlPostRepository.create`), and a never-sent post is resent only by whoever wins the
conditional update that takes its send lease.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import ColumnElement, and_, func, select, update

from bot.domain import (
    ChannelRef,
    ChannelSettings,
    DemoPolicy,
    Platform,
    Post,
    PostKind,
    PostState,
    Schedule,
)
from bot.scheduling.ports import SlotClaim
from storage._sql import RefRepository, added_id, from_row, insert
from storage.models import ChannelRow, PostRow, ScheduleRow, TeamPackRow, UtcDateTime
from storage.posts import post_select, to_post
from storage.refs import channel_ref, is_channel
from storage.settings import same_workspace, settings_of

HISTORY_LIMIT = 1000  # the same window as SqlPostRepository.history
CLAIM_CHUNK = 500
_CLAIMED = PostState.CLAIMED.value
_OPEN = PostState.OPEN.value


def _to_schedule(row: ScheduleRow, ch: ChannelRow) -> Schedule:
    return from_row(
        Schedule,
        row,
        channel=channel_ref(ch),
        demo_policy=DemoPolicy(row.demo_policy),
    )


_SCHEDULE_COLUMNS = (
    ScheduleRow.id,
    ChannelRow.platform,
    ChannelRow.workspace,
    ChannelRow.channel,
    ScheduleRow.timezone,
    ScheduleRow.local_time,
    ScheduleRow.weekdays,
    ScheduleRow.cron,
    ScheduleRow.window_seconds,
    ScheduleRow.demo_policy,
    ScheduleRow.enabled,
)


def _lease_start() -> ColumnElement[datetime]:
    """When the current send attempt began: the last lease, else the claim."""
    return func.coalesce(PostRow.send_leased_at, PostRow.created_at, type_=UtcDateTime())


_LIVE = (PostKind.LIVE.value, PostKind.LIVE_COUNTED.value)  # `storage.live` sends them


class SqlScheduleRepository(RefRepository):
    # -- schedules ---------------------------------------------------------------------

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
    ) -> Schedule:
        async with self._sessions.begin() as s:
            cid = await self._refs.channel_id(s, channel, created_at)
            row = ScheduleRow(
                channel_id=cid,
                timezone=timezone,
                local_time=local_time,
                weekdays=weekdays,
                cron=cron,
                window_seconds=window_seconds,
                demo_policy=str(demo_policy),
                enabled=True,
                created_at=created_at,
                created_by=created_by[:64],
            )
            sid = await added_id(s, row)
        found = await self.get(sid)
        assert found is not None
        return found

    async def get(self, schedule_id: int) -> Schedule | None:
        async with self._sessions() as s:
            found = (
                await s.execute(
                    select(ScheduleRow, ChannelRow)
                    .join(ChannelRow, ChannelRow.id == ScheduleRow.channel_id)
                    .where(ScheduleRow.id == schedule_id)
                )
            ).first()
        return _to_schedule(*found) if found else None

    async def enabled(self) -> list[Schedule]:
        # Plain columns, not ORM objects: this reads the whole table at every start.
        stmt = (
            select(*_SCHEDULE_COLUMNS)
            .join(ChannelRow, ChannelRow.id == ScheduleRow.channel_id)
            .where(ScheduleRow.enabled.is_(True))
            .order_by(ScheduleRow.id)
        )
        async with self._sessions() as s:
            rows = (await s.execute(stmt)).all()
        channels: dict[tuple[str, str, str], ChannelRef] = {}
        out = []
        for sid, platform, workspace, channel, tz, local, days, cron, window, demo, on in rows:
            ref = channels.get((platform, workspace, channel))
            if ref is None:
                ref = channels[(platform, workspace, channel)] = ChannelRef(
                    Platform(platform), workspace, channel
                )
            out.append(
                Schedule(sid, ref, tz, local, days, cron, window, DemoPolicy(demo), bool(on))
            )
        return out

    async def in_channel(self, channel: ChannelRef) -> list[Schedule]:
        async with self._sessions() as s:
            rows = await s.execute(
                select(ScheduleRow, ChannelRow)
                .join(ChannelRow, ChannelRow.id == ScheduleRow.channel_id)
                .where(ScheduleRow.enabled.is_(True), *_channel_filter(channel))
                .order_by(ScheduleRow.id)
            )
            return [_to_schedule(*r) for r in rows.all()]

    async def disable(self, channel: ChannelRef, schedule_id: int | None = None) -> list[int]:
        channel_ids = select(ChannelRow.id).where(*_channel_filter(channel)).scalar_subquery()
        stmt = (
            update(ScheduleRow)
            .where(ScheduleRow.channel_id == channel_ids, ScheduleRow.enabled.is_(True))
            .values(enabled=False)
            .returning(ScheduleRow.id)
        )
        if schedule_id is not None:
            stmt = stmt.where(ScheduleRow.id == schedule_id)
        async with self._sessions.begin() as s:
            return sorted((await s.execute(stmt)).scalars().all())

    async def enabled_among(self, ids: Collection[int]) -> set[int]:
        if not ids:
            return set()
        async with self._sessions() as s:
            rows = await s.execute(
                select(ScheduleRow.id).where(
                    ScheduleRow.id.in_(list(ids)), ScheduleRow.enabled.is_(True)
                )
            )
            return set(rows.scalars().all())

    async def fingerprint(self) -> tuple[int, int, int]:
        async with self._sessions() as s:
            row = (
                await s.execute(
                    select(
                        func.count(ScheduleRow.id),
                        func.coalesce(func.sum(ScheduleRow.id), 0),
                        func.coalesce(func.max(ScheduleRow.id), 0),
                    ).where(ScheduleRow.enabled.is_(True))
                )
            ).one()
        return int(row[0]), int(row[1]), int(row[2])

    async def watermarks(self, ids: Collection[int] | None = None) -> dict[int, datetime]:
        # A correlated max per schedule walks the (schedule_id, slot_at) unique index.
        newest = (
            select(func.max(PostRow.slot_at))
            .where(PostRow.schedule_id == ScheduleRow.id)
            .correlate(ScheduleRow)
            .scalar_subquery()
        )
        stmt = select(ScheduleRow.id, ScheduleRow.created_at, newest.label("newest")).where(
            ScheduleRow.enabled.is_(True)
        )
        if ids is not None:
            if not ids:
                return {}
            stmt = stmt.where(ScheduleRow.id.in_(list(ids)))
        async with self._sessions() as s:
            rows = (await s.execute(stmt)).all()
        out: dict[int, datetime] = {}
        for sid, created_at, newest_slot in rows:
            out[sid] = max(created_at, newest_slot) if newest_slot is not None else created_at
        return out

    # -- claiming many slots at once ------------------------------------------------

    async def claim_inputs(
        self, schedule_ids: Collection[int]
    ) -> dict[int, tuple[ChannelSettings, list[str]]]:
        ids = sorted(set(schedule_ids))
        if not ids:
            return {}
        async with self._sessions() as s:
            channels = (
                await s.execute(
                    select(ScheduleRow.id, ChannelRow, TeamPackRow.revision)
                    .join(ChannelRow, ChannelRow.id == ScheduleRow.channel_id)
                    .outerjoin(TeamPackRow, same_workspace())
                    .where(ScheduleRow.id.in_(ids))
                )
            ).all()
            channel_ids = sorted({ch.id for _, ch, _ in channels})
            # The newest HISTORY_LIMIT channel posts per channel, as posts.history has them.
            ranked = (
                select(
                    PostRow.channel_id,
                    PostRow.question_id,
                    func.row_number()
                    .over(partition_by=PostRow.channel_id, order_by=PostRow.id.desc())
                    .label("rank"),
                )
                .where(
                    PostRow.channel_id.in_(channel_ids),
                    PostRow.kind != PostKind.PRACTICE.value,
                )
                .subquery()
            )
            rows = (
                await s.execute(
                    select(ranked.c.channel_id, ranked.c.question_id)
                    .where(ranked.c.rank <= HISTORY_LIMIT)
                    .order_by(ranked.c.channel_id, ranked.c.rank)
                )
            ).all()
        history: dict[int, list[str]] = {}
        for channel_id, question_id in rows:
            history.setdefault(channel_id, []).append(question_id)
        out: dict[int, tuple[ChannelSettings, list[str]]] = {}
        for sid, ch, revision in channels:
            out[sid] = (settings_of(ch, revision), history.get(ch.id, []))
        return out

    async def claim_slots(self, claims: Collection[SlotClaim], at: datetime) -> list[Post]:
        # One order for every instance: concurrent claimers wait on each other's unique
        # keys in the same order, so they never deadlock.
        ordered = sorted(claims, key=lambda c: (c.schedule_id, c.slot_at))
        if not ordered:
            return []
        won: list[int] = []
        for start in range(0, len(ordered), CLAIM_CHUNK):
            chunk = ordered[start : start + CLAIM_CHUNK]
            async with self._sessions.begin() as s:
                channel_of = dict(
                    (
                        await s.execute(
                            select(ScheduleRow.id, ScheduleRow.channel_id).where(
                                ScheduleRow.id.in_([c.schedule_id for c in chunk])
                            )
                        )
                    ).all()
                )
                stmt = (
                    insert(self._dialect, PostRow)
                    .on_conflict_do_nothing(index_elements=["schedule_id", "slot_at"])
                    .returning(PostRow.id)
                )
                rows = [
                    {
                        "channel_id": channel_of[c.schedule_id],
                        "question_id": c.question_id,
                        "question_hash": c.question_hash,
                        "correct_choice": c.correct_choice,
                        "choice_count": c.choice_count,
                        "kind": PostKind.SCHEDULED.value,
                        "state": _CLAIMED,
                        "locale": str(c.locale),
                        "created_at": at,
                        "closes_at": c.closes_at,
                        "answer_count": 0,
                        "schedule_id": c.schedule_id,
                        "slot_at": c.slot_at,
                        "send_attempts": 0,
                    }
                    for c in chunk
                    if c.schedule_id in channel_of
                ]
                if rows:
                    won += list((await s.execute(stmt, rows)).scalars().all())
        if not won:
            return []
        async with self._sessions() as s:
            found = (await s.execute(post_select().where(PostRow.id.in_(won)))).all()
        return sorted((to_post(*r) for r in found), key=lambda p: p.id)

    # -- posts, for the reconciler ---------------------------------------------------

    async def due(self, now: datetime, platforms: Collection[str], limit: int = 100) -> list[Post]:
        stmt = (
            post_select()
            .where(
                PostRow.state == _OPEN,
                PostRow.closes_at <= now,
                PostRow.kind.not_in(_LIVE),  # a live round closes its own questions
                ChannelRow.platform.in_([str(p) for p in platforms]),
            )
            .order_by(PostRow.closes_at.asc())
            .limit(limit)
        )
        async with self._sessions() as s:
            return [to_post(*r) for r in (await s.execute(stmt)).all()]

    async def lease_unsent(
        self, now: datetime, stale_before: datetime, platforms: Collection[str], limit: int = 100
    ) -> list[Post]:
        lease_start = _lease_start()
        stale = and_(
            PostRow.state == _CLAIMED,
            PostRow.kind.not_in((PostKind.PRACTICE.value, *_LIVE)),
            lease_start <= stale_before,
        )
        async with self._sessions() as s:
            candidates = (
                (
                    await s.execute(
                        select(PostRow.id)
                        .join(ChannelRow, ChannelRow.id == PostRow.channel_id)
                        .where(stale, ChannelRow.platform.in_([str(p) for p in platforms]))
                        .order_by(PostRow.id)
                        .limit(limit)
                    )
                )
                .scalars()
                .all()
            )
        won: list[int] = []
        for post_id in candidates:
            # Whoever moves the lease forward owns this attempt; the others see no row.
            async with self._sessions.begin() as s:
                taken = (
                    await s.execute(
                        update(PostRow)
                        .where(PostRow.id == post_id, stale)
                        .values(send_leased_at=now, send_attempts=PostRow.send_attempts + 1)
                        .returning(PostRow.id)
                    )
                ).first()
            if taken is not None:
                won.append(post_id)
        if not won:
            return []
        async with self._sessions() as s:
            rows = (await s.execute(post_select().where(PostRow.id.in_(won)))).all()
        return sorted((to_post(*r) for r in rows), key=lambda p: p.id)

    async def abandon_unsent(self, post_id: int, at: datetime) -> bool:
        async with self._sessions.begin() as s:
            changed = (
                await s.execute(
                    update(PostRow)
                    .where(PostRow.id == post_id, PostRow.state == _CLAIMED)
                    .values(state=PostState.CLOSED.value, closed_at=at)
                    .returning(PostRow.id)
                )
            ).first()
        return changed is not None

    async def next_deadlines(self) -> tuple[datetime | None, datetime | None]:
        async with self._sessions() as s:
            next_close = (
                await s.execute(select(func.min(PostRow.closes_at)).where(PostRow.state == _OPEN))
            ).scalar_one_or_none()
            oldest = (
                await s.execute(
                    select(func.min(_lease_start())).where(
                        PostRow.state == _CLAIMED, PostRow.kind != PostKind.PRACTICE.value
                    )
                )
            ).scalar_one_or_none()
        return next_close, oldest


def _channel_filter(channel: ChannelRef) -> list[ColumnElement[bool]]:
    return [
        *is_channel(channel),
    ]


__all__ = ["SqlScheduleRepository"]
