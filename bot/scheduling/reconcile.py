"""The reconciler's repairs: reveal posts whose window passed (also after downtime), post
the reveals that failed after their close, and resend claimed posts whose platform message
was never stored.

All are safe with any number of instances: closing is a conditional update (one closer
wins and reveals), and a reveal retry or a resend first takes the post's reveal or send
lease (one instance per lease period tries it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Collection, Iterable
from datetime import datetime, timedelta
from typing import TypeVar

from bot.domain import ChannelRef, Post
from bot.metrics import QuizMetrics
from bot.quiz import QuizService
from bot.scheduling.ports import ScheduleStore

log = logging.getLogger(__name__)

CONCURRENCY = 32  # reveals and resends in flight at once
_BATCH = 200
T = TypeVar("T")


async def close_due(
    service: QuizService, store: ScheduleStore, platforms: Collection[str], now: datetime
) -> int:
    """Close and reveal every open post on these platforms whose window has passed.
    Returns how many this instance revealed."""
    revealed = 0
    for _ in range(20):
        due = await store.due(now, platforms, limit=_BATCH)
        if not due:
            break
        results = await bounded(_close_one(service, p.id) for p in due)
        revealed += sum(results)
        if len(due) < _BATCH:
            break
    return revealed


async def _close_one(service: QuizService, post_id: int) -> bool:
    try:
        return await service.close(post_id) is not None
    except Exception:
        log.exception("could not reveal post %s", post_id)
        return False


async def retry_reveals(
    service: QuizService,
    platforms: Collection[str],
    stale_before: datetime,
    lease: timedelta,
    metrics: QuizMetrics,
) -> int:
    """Post the reveal of closed posts on these platforms whose reveal never reached the
    platform (the call failed, or the process stopped after the close), last tried before
    ``stale_before``. Returns how many this instance posted."""
    posts = await service.store.posts.unrevealed(stale_before, _BATCH, platforms)
    results = await bounded(_retry_reveal_one(service, metrics, p, lease) for p in posts)
    return sum(results)


async def can_post(service: QuizService, channel: ChannelRef) -> bool:
    """Whether the platform takes posts for `channel` now: a chat may say no with an
    optional ``can_post`` (`SlackChat`: a workspace with no installation). Its work is
    paused — slots skipped, reveals and resends left for later — not failed."""
    chat = service.chats.get(channel.platform)
    check = getattr(chat, "can_post", None)
    return True if check is None else bool(await check(channel))


async def _retry_reveal_one(
    service: QuizService, metrics: QuizMetrics, post: Post, lease: timedelta
) -> bool:
    if not await can_post(service, post.channel):
        return False  # paused: tried again once the workspace is back
    try:
        reveal = await service.retry_reveal(post, lease)
    except Exception:
        metrics.reconciler_retries.inc()  # it held the lease and tried
        log.exception("posting the reveal of post %s failed again; tried later", post.id)
        return False
    if reveal is None:
        return False  # another instance holds the lease, or it is done
    metrics.reconciler_retries.inc()
    return True


async def resend_unsent(
    service: QuizService,
    store: ScheduleStore,
    platforms: Collection[str],
    now: datetime,
    stale_before: datetime,
    metrics: QuizMetrics,
) -> tuple[int, int]:
    """Send claimed posts that never got their platform message (claimed or last tried
    before ``stale_before``); close, unsent, those whose window is over.
    Returns (resent, abandoned)."""
    posts = await store.lease_unsent(now, stale_before, platforms)
    results = await bounded(_resend_one(service, store, metrics, p, now) for p in posts)
    return sum(r == "resent" for r in results), sum(r == "abandoned" for r in results)


async def _resend_one(
    service: QuizService, store: ScheduleStore, metrics: QuizMetrics, post: Post, now: datetime
) -> str:
    if post.closes_at is not None and post.closes_at <= now:
        if await store.abandon_unsent(post.id, now):
            log.warning(
                "post %s in %s was never sent and its window is over: not posted",
                post.id,
                post.channel.key,
            )
            return "abandoned"
        return ""
    if not await can_post(service, post.channel):
        return ""  # paused: its window runs out, or the workspace is back first
    question = await service.store.questions.get(post.question_hash)
    if question is None:
        log.error("post %s has no stored question version %s", post.id, post.question_hash)
        return ""
    metrics.reconciler_retries.inc()
    try:
        await service.publish(post, question)
    except Exception:
        log.exception("resending post %s failed; it is tried again later", post.id)
        return ""
    log.info("resent post %s (claimed, never sent) in %s", post.id, post.channel.key)
    return "resent"


async def bounded(coros: Iterable[Awaitable[T]], limit: int = CONCURRENCY) -> list[T]:
    """Await all, at most ``limit`` at a time."""
    sem = asyncio.Semaphore(limit)

    async def run(c: Awaitable[T]) -> T:
        async with sem:
            return await c

    return list(await asyncio.gather(*(run(c) for c in coros)))


__all__ = ["bounded", "close_due", "resend_unsent", "retry_reveals"]
