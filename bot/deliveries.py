"""Acknowledged ⇒ durable, for commands and clicks that are not answers.

Slack and Discord must be answered within 3 s, often before the work is done; a process
killed in between would lose a request its sender believes delivered (Slack does not
redeliver what was acknowledged). So an adapter `begin`s each command or click before it
acknowledges it: the request is stored under the platform's own id (a Slack
``trigger_id``, a Discord interaction id). That key also makes a redelivery harmless on
every replica (`begin` answers False: drop it). When the work is done the adapter
`finish`es it. A request whose handler died is replayed by the adapter's replayer once
its lease passes (`replay_due`: when an adapter has started, then every `interval`),
while its reply URL or token is still valid (`max_age`).

Answer clicks do not come through here: they are recorded before they are acknowledged
(group commit makes that cheap), and an answer is idempotent (one per user).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from bot.clock import Clock
from bot.domain import Delivery
from bot.lifecycle import Lifecycle
from bot.logs import ThrottledLog, problem_key
from bot.metrics import QuizMetrics
from bot.ports import DeliveryLog
from bot.tasks import TaskSupervisor

log = logging.getLogger(__name__)

Replayer = Callable[[Delivery], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class _Replay:
    replay: Replayer
    max_age: timedelta


class Deliveries(Lifecycle):
    def __init__(
        self,
        deliveries: DeliveryLog,
        clock: Clock,
        metrics: QuizMetrics | None = None,
        *,
        lease: timedelta = timedelta(seconds=60),
        interval: float = 30.0,
        keep: timedelta = timedelta(days=1),
    ) -> None:
        self._log = deliveries
        self._clock = clock
        self._metrics = metrics
        self.lease = lease
        self.interval = interval
        self.keep = keep
        self._replayers: dict[str, _Replay] = {}
        self._tasks = TaskSupervisor("deliveries")
        self._problems = ThrottledLog(log)

    async def initialize(self) -> None:
        self._tasks.spawn(self._every_interval(), name="deliveries-replay")

    async def shutdown(self) -> None:
        await self._tasks.cancel()

    def add_replayer(self, platform: str, replay: Replayer, max_age: timedelta) -> None:
        """Replay `platform`'s unfinished requests younger than `max_age` (their reply URL
        or token still valid) with `replay`."""
        self._replayers[platform] = _Replay(replay, max_age)

    async def begin(self, key: str, platform: str, payload: Mapping[str, Any] | None) -> bool:
        """Store the request before it is acknowledged. False: a redelivery of a request
        already taken (here or on another replica) — acknowledge it and do nothing else.
        When the database does not answer, the request is handled anyway (True): better
        once without a crash guarantee than not at all."""
        try:
            fresh = await self._log.claim(key, platform, self._clock.now(), self.lease, payload)
        except Exception as exc:
            self._problems.problem(
                problem_key("delivery log", exc), "could not store a %s request", platform, exc=exc
            )
            return True
        if not fresh and self._metrics is not None:
            self._metrics.redeliveries.inc(platform=platform)
        return fresh

    async def finish(self, key: str) -> None:
        try:
            await self._log.finish(key, self._clock.now())
        except Exception as exc:  # it is replayed later: the handlers are idempotent enough
            self._problems.problem(
                problem_key("delivery log", exc), "could not mark a request done", exc=exc
            )

    async def replay_due(self) -> int:
        """Replay every platform's unfinished requests whose handler died. Returns how many."""
        count = 0
        for platform, replayer in self._replayers.items():
            now = self._clock.now()
            for delivery in await self._log.take_unfinished(
                platform, now, self.lease, replayer.max_age
            ):
                log.info(
                    "replaying %s request %s (attempt %d)",
                    platform,
                    delivery.key,
                    delivery.attempts,
                )
                try:
                    await replayer.replay(delivery)
                except Exception as exc:
                    self._problems.problem(
                        problem_key("replay", exc), "replaying %s failed", delivery.key, exc=exc
                    )
                    continue
                await self.finish(delivery.key)
                count += 1
        return count

    async def _every_interval(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.replay_due()
                await self._log.prune(self._clock.now() - self.keep)
            except Exception as exc:
                self._problems.problem(
                    problem_key("replay", exc), "replaying deliveries failed", exc=exc
                )


__all__ = ["Deliveries", "Replayer"]
