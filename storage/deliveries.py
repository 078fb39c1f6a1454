"""Deliveries: platform requests the bot acknowledged, keyed so that a redelivery (Slack's
retries, Socket Mode's re-sent envelopes, a request retried to another replica) is
recognised on every replica, and kept until handled so that a crash replays them.

`claim` inserts the row before the acknowledgement goes out (ON CONFLICT DO NOTHING: one
caller wins, on any replica). `finish` marks it done and drops the payload (it holds a
reply URL or an interaction token, credentials for minutes). `take_unfinished` hands rows
whose lease passed — their process died — to a replayer, under a new lease.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, select, update

from bot.domain import Delivery
from storage._sql import SqlRepository, insert
from storage.models import DeliveryRow

MAX_KEY = 200


class SqlDeliveryLog(SqlRepository):
    async def claim(
        self,
        key: str,
        platform: str,
        now: datetime,
        lease: timedelta,
        payload: Mapping[str, Any] | None = None,
    ) -> bool:
        """Record a request before acknowledging it: True for its first delivery, False
        for a redelivery (anywhere) of one already claimed."""
        stmt = (
            insert(self._dialect, DeliveryRow)
            .values(
                key=key[:MAX_KEY],
                platform=platform,
                received_at=now,
                leased_until=now + lease,
                attempts=1,
                payload=json.dumps(payload) if payload is not None else None,
            )
            .on_conflict_do_nothing(index_elements=["key"])
            .returning(DeliveryRow.key)
        )
        async with self._sessions.begin() as s:
            return (await s.execute(stmt)).first() is not None

    async def finish(self, key: str, now: datetime) -> None:
        async with self._sessions.begin() as s:
            await s.execute(
                update(DeliveryRow)
                .where(DeliveryRow.key == key[:MAX_KEY])
                .values(done_at=now, payload=None)
            )

    async def take_unfinished(
        self,
        platform: str,
        now: datetime,
        lease: timedelta,
        max_age: timedelta,
        limit: int = 100,
    ) -> list[Delivery]:
        """Unfinished deliveries of `platform` whose lease passed and that are younger than
        `max_age` (a reply URL or token still valid), each under a new lease for this
        caller. Older ones are closed as expired: nobody can answer them any more."""
        async with self._sessions.begin() as s:
            await s.execute(
                update(DeliveryRow)
                .where(
                    DeliveryRow.platform == platform,
                    DeliveryRow.done_at.is_(None),
                    DeliveryRow.received_at < now - max_age,
                )
                .values(done_at=now, payload=None)
            )
            rows = (
                await s.execute(
                    select(DeliveryRow)
                    .where(
                        DeliveryRow.platform == platform,
                        DeliveryRow.done_at.is_(None),
                        DeliveryRow.leased_until <= now,
                    )
                    .order_by(DeliveryRow.received_at)
                    .limit(limit)
                )
            ).scalars()
            taken: list[Delivery] = []
            for row in list(rows):
                moved = await s.execute(
                    update(DeliveryRow)
                    .where(
                        and_(
                            DeliveryRow.key == row.key,
                            DeliveryRow.leased_until == row.leased_until,
                            DeliveryRow.done_at.is_(None),
                        )
                    )
                    .values(leased_until=now + lease, attempts=DeliveryRow.attempts + 1)
                )
                if moved.rowcount == 1:  # type: ignore[attr-defined]
                    taken.append(
                        Delivery(
                            row.key,
                            row.platform,
                            row.received_at,
                            row.attempts + 1,
                            json.loads(row.payload) if row.payload else None,
                        )
                    )
        return taken

    async def prune(self, older_than: datetime) -> int:
        """Forget finished deliveries received before `older_than` (platforms stop
        redelivering after minutes)."""
        async with self._sessions.begin() as s:
            result = await s.execute(
                delete(DeliveryRow).where(
                    DeliveryRow.done_at.is_not(None), DeliveryRow.received_at < older_than
                )
            )
        return int(result.rowcount)  # type: ignore[attr-defined]


__all__ = ["SqlDeliveryLog"]
