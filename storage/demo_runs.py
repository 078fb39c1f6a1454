"""Demo runs: recorded before they are submitted, finished and posted by conditional
updates, so two bot instances never post one result twice."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Select, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.demos.runs import DemoRun
from bot.domain import ChannelRef, DemoResult, DemoState, Locale, MessageRef, Post
from storage._sql import RefRepository, added_id, dialect_name, from_row, insert
from storage.models import ChannelRow, DemoRunRow
from storage.refs import RefResolver, channel_ref, is_channel

_ACTIVE = (DemoState.QUEUED.value, DemoState.RUNNING.value)
_FINISHED = (DemoState.SUCCEEDED.value, DemoState.FAILED.value, DemoState.TIMED_OUT.value)


def _select() -> Select[DemoRunRow, ChannelRow]:
    return select(DemoRunRow, ChannelRow).join(ChannelRow, ChannelRow.id == DemoRunRow.channel_id)


def _to_run(row: DemoRunRow, ch: ChannelRow) -> DemoRun:
    channel = channel_ref(ch)
    return from_row(
        DemoRun,
        row,
        channel=channel,
        locale=Locale(row.locale),
        state=DemoState(row.state),
        params=json.loads(row.params or "{}"),
        parent=MessageRef(channel, row.parent_message_id) if row.parent_message_id else None,
        status_message=(
            MessageRef(channel, row.status_message_id) if row.status_message_id else None
        ),
        metrics=json.loads(row.metrics or "{}"),
    )


def _queued(
    channel_id: int,
    demo: str,
    locale: Locale,
    params: Mapping[str, Any],
    created_at: datetime,
    *,
    post_id: int | None,
    parent: MessageRef | None,
) -> dict[str, Any]:
    """The columns of a new run, queued."""
    return {
        "channel_id": channel_id,
        "post_id": post_id,
        "parent_message_id": parent.message if parent else None,
        "demo": demo,
        "locale": str(locale),
        "params": json.dumps(dict(params), sort_keys=True),
        "state": DemoState.QUEUED.value,
        "device": "",
        "report": "",
        "metrics": "{}",
        "error": "",
        "created_at": created_at,
    }


class SqlDemoRunRepository(RefRepository):
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], refs: RefResolver | None = None
    ) -> None:
        super().__init__(sessions, refs or RefResolver(dialect_name(sessions)))

    async def create(
        self,
        channel: ChannelRef,
        demo: str,
        locale: Locale,
        params: Mapping[str, Any],
        created_at: datetime,
        *,
        post_id: int | None = None,
        parent: MessageRef | None = None,
    ) -> DemoRun:
        async with self._sessions.begin() as s:
            cid = await self._refs.channel_id(s, channel, created_at)
            row = DemoRunRow(
                **_queued(cid, demo, locale, params, created_at, post_id=post_id, parent=parent)
            )
            run_id = await added_id(s, row)
        run = await self.get(run_id)
        assert run is not None
        return run

    async def create_for_post(
        self, post: Post, demo: str, locale: Locale, params: Mapping[str, Any], created_at: datetime
    ) -> tuple[DemoRun, bool]:
        """One run per (post, demo): the unique index decides between concurrent callers."""
        assert post.message is not None, "a question's run goes under its message"
        async with self._sessions.begin() as s:
            cid = await self._refs.channel_id(s, post.channel, created_at)
            queued = _queued(
                cid, demo, locale, params, created_at, post_id=post.id, parent=post.message
            )
            stmt = (
                insert(self._dialect, DemoRunRow)
                .values(**queued)
                .on_conflict_do_nothing(
                    index_elements=["post_id", "demo"], index_where=DemoRunRow.post_id.is_not(None)
                )
                .returning(DemoRunRow.id)
            )
            new_id = (await s.execute(stmt)).scalar_one_or_none()
            run_id = new_id
            if run_id is None:
                run_id = (
                    await s.execute(
                        select(DemoRunRow.id).where(
                            DemoRunRow.post_id == post.id, DemoRunRow.demo == demo
                        )
                    )
                ).scalar_one()
        run = await self.get(run_id)
        assert run is not None
        return run, new_id is not None

    async def get(self, run_id: int) -> DemoRun | None:
        async with self._sessions() as s:
            found = (await s.execute(_select().where(DemoRunRow.id == run_id))).first()
        return _to_run(found[0], found[1]) if found else None

    async def in_channel(self, channel: ChannelRef, limit: int = 20) -> list[DemoRun]:
        """The channel's latest runs, newest first (the dashboard's demo page)."""
        async with self._sessions() as s:
            rows = await s.execute(
                _select()
                .where(
                    *is_channel(channel),
                )
                .order_by(DemoRunRow.id.desc())
                .limit(limit)
            )
            return [_to_run(r, c) for r, c in rows]

    async def for_post(self, post_id: int) -> list[DemoRun]:
        async with self._sessions() as s:
            rows = await s.execute(
                _select().where(DemoRunRow.post_id == post_id).order_by(DemoRunRow.id)
            )
            return [_to_run(row[0], row[1]) for row in rows]

    async def set_status_message(self, run_id: int, message: MessageRef) -> None:
        async with self._sessions.begin() as s:
            await s.execute(
                update(DemoRunRow)
                .where(DemoRunRow.id == run_id)
                .values(status_message_id=message.message)
            )

    async def _change(self, run_id: int, where: Any, **values: Any) -> bool:
        async with self._sessions.begin() as s:
            changed = (
                await s.execute(
                    update(DemoRunRow)
                    .where(DemoRunRow.id == run_id, where)
                    .values(**values)
                    .returning(DemoRunRow.id)
                )
            ).first()
        return changed is not None

    async def mark_running(self, run_id: int, device: str, at: datetime) -> bool:
        return await self._change(
            run_id,
            DemoRunRow.state == DemoState.QUEUED.value,
            state=DemoState.RUNNING.value,
            device=device,
            started_at=at,
        )

    async def requeue(self, run_id: int) -> bool:
        return await self._change(
            run_id, DemoRunRow.state == DemoState.RUNNING.value, state=DemoState.QUEUED.value
        )

    async def finish(self, run_id: int, result: DemoResult, at: datetime) -> bool:
        return await self._change(
            run_id,
            DemoRunRow.state.in_(_ACTIVE),
            state=result.state.value,
            device=result.device[:200],
            report=result.report,
            metrics=json.dumps(dict(result.metrics), sort_keys=True, default=str),
            error=result.error,
            finished_at=at,
        )

    async def claim_posting(self, run_id: int, at: datetime) -> bool:
        return await self._change(run_id, DemoRunRow.posted_at.is_(None), posted_at=at)

    async def release_posting(self, run_id: int) -> None:
        async with self._sessions.begin() as s:
            await s.execute(
                update(DemoRunRow).where(DemoRunRow.id == run_id).values(posted_at=None)
            )

    async def unfinished(self, limit: int = 100) -> list[DemoRun]:
        async with self._sessions() as s:
            rows = await s.execute(
                _select()
                .where(
                    or_(
                        DemoRunRow.state.in_(_ACTIVE),
                        DemoRunRow.state.in_(_FINISHED) & DemoRunRow.posted_at.is_(None),
                    )
                )
                .order_by(DemoRunRow.id)
                .limit(limit)
            )
            return [_to_run(row[0], row[1]) for row in rows]
