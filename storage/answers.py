"""Answers, recorded with group commit.

A transaction per answer tops out near 1,000/s on SQLite; a burst of clicks on a popular
question needs more. Concurrent `record` calls are queued and one writer task commits
them together: per post it locks the post row (checking it is open and that the click
came from the post's channel), inserts the answers with ON CONFLICT DO NOTHING on
(post, member) — first answer wins, exactly as with a transaction each — and bumps the
post's answer count. Every caller gets its own outcome.

What production does to it (replicas, database blips, bad input) is handled here, once,
for every platform:

- Post rows are locked in ascending id order and member rows are upserted sorted, in a
  transaction of their own: two replicas can never wait on each other in a cycle.
- A click stamped at or before its member's erasure is refused (`ERASED`), whichever
  replica erased them and whenever the click is committed (`storage.erasures`: a fence
  and a lock both sides take before any post row); a cached id naming an erased row is
  resolved again, never written to.
- Each post's work runs in its own savepoint, so one post that fails fails alone.
- Deadlocks, serialization failures and lost connections are retried with backoff
  (`storage.faults.Backoff`) before anyone is told; then the waiting clicks get
  `StorageUnavailable` ("try again in a moment"), never a silent loss.
- Ids beyond the database's integer range never reach it.
- `shutdown` stops taking clicks and resolves every queued one: recorded, or told to retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field, replace
from datetime import datetime

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.domain import (
    Answer,
    AnswerOutcome,
    AnswerStatus,
    ChannelRef,
    Post,
    PostKind,
    PostState,
    UserRef,
)
from bot.errors import StorageUnavailable
from storage._sql import RefRepository, insert
from storage.erasures import StaleMemberIds, refused_clicks, writer_member_ids
from storage.faults import Backoff, RetryObserver, transient_reason
from storage.models import AnswerRow, ChannelRow, MemberRow, PostRow
from storage.posts import to_post
from storage.practice import record_practice_answer
from storage.refs import RefResolver, user_ref

log = logging.getLogger(__name__)

MAX_BATCH = 2000
MAX_ID = 2**63 - 1  # BIGINT; a larger id is no post of ours
MAX_CHOICE = 32  # far above any question's choices; SMALLINT-safe
STALE_ROUNDS = 3  # batches resolved again after finding an erased member's cached id


_LIVE = (PostKind.LIVE.value, PostKind.LIVE_COUNTED.value)


@dataclass(slots=True)
class _Pending:
    post_id: int
    user: UserRef
    choice: int
    at: datetime
    channel: ChannelRef | None
    future: asyncio.Future[AnswerOutcome]
    value: float | None = None  # a typed answer
    correct: bool | None = None  # set for a typed answer (its choice may be -1)

    def valid_for(self, choices: int) -> bool:
        return self.value is not None or 0 <= self.choice < choices

    def is_correct(self, correct_choice: int) -> bool:
        return self.correct if self.correct is not None else self.choice == correct_choice


class SqlAnswerRepository(RefRepository):
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        refs: RefResolver,
        *,
        backoff: Backoff | None = None,
        observer: RetryObserver | None = None,
    ) -> None:
        super().__init__(sessions, refs)
        self._backoff = backoff or Backoff()
        self.observer = observer
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self._in_flight = 0
        self._closing = False
        self._idle = asyncio.Event()  # set when nothing is queued or being committed
        self._idle.set()

    @property
    def waiting(self) -> int:
        """Clicks queued or being committed (the metrics' ``answers waiting`` gauge)."""
        return self._queue.qsize() + self._in_flight

    async def record(
        self,
        post_id: int,
        user: UserRef,
        choice: int,
        at: datetime,
        channel: ChannelRef | None = None,
        *,
        value: float | None = None,
        correct: bool | None = None,
    ) -> AnswerOutcome:
        """Record `user`'s answer unless they answered this post already (first one counts).

        With `channel`, a click whose post belongs to another channel is refused
        (`WRONG_CHANNEL`). Raises `StorageUnavailable` when the database did not answer
        within the retry budget, or the writer is shutting down.
        """
        if not 0 < post_id <= MAX_ID:
            return AnswerOutcome(AnswerStatus.UNKNOWN_POST)
        if not -1 <= choice < MAX_CHOICE:
            choice = -1  # refused as an invalid choice, after the post is checked
        if self._closing:
            raise StorageUnavailable("the bot is shutting down")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[AnswerOutcome] = loop.create_future()
        self._queue.put_nowait(_Pending(post_id, user, choice, at, channel, fut, value, correct))
        self._idle.clear()
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._write_loop(), name="answer-writer")
        return await fut

    async def shutdown(self, timeout: float = 10.0) -> None:
        """Take no more clicks; commit the queued ones (up to `timeout`), then tell any
        left that they were not recorded."""
        self._closing = True
        writer = self._writer
        if writer is not None and not writer.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._drained(), timeout)
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer
        self._writer = None
        while not self._queue.empty():
            _resolve(self._queue.get_nowait(), StorageUnavailable("the bot is shutting down"))

    async def _drained(self) -> None:
        await self._idle.wait()

    async def _write_loop(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while len(batch) < MAX_BATCH and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            self._in_flight = len(batch)
            try:
                results = await self._commit_with_retries(batch)
            except asyncio.CancelledError:
                for p in batch:
                    _resolve(p, StorageUnavailable("the bot is shutting down"))
                raise
            except Exception as exc:  # every waiter hears about it; the next batch goes on
                if not isinstance(exc, StorageUnavailable):
                    log.exception("an answer batch of %d failed", len(batch))
                results = [exc] * len(batch)
            finally:
                self._in_flight = 0
            for p, result in zip(batch, results, strict=True):
                _resolve(p, result)
            if self._queue.empty():
                self._idle.set()

    async def _commit_with_retries(self, batch: list[_Pending]) -> list[AnswerOutcome | Exception]:
        async def attempt() -> list[AnswerOutcome | Exception]:
            return await self._commit(batch)

        return await self._backoff.run(attempt, "record answers", self.observer)

    async def _commit(self, batch: list[_Pending]) -> list[AnswerOutcome | Exception]:
        for _ in range(STALE_ROUNDS):
            try:
                return await self._commit_once(batch)
            except StaleMemberIds:
                continue  # a member erased on another replica: their id is resolved again
        raise StorageUnavailable("member ids kept changing under the batch")

    async def _commit_once(self, batch: list[_Pending]) -> list[AnswerOutcome | Exception]:
        clicks = [(p.user, p.at) for p in batch]
        # Members first, in their own transaction: committed rows only, locked sorted;
        # none created for a click an erasure fenced.
        member_ids = await writer_member_ids(self._sessions, self._refs, self._dialect, clicks)
        results: list[AnswerOutcome | Exception] = [
            StorageUnavailable("not committed") for _ in batch
        ]
        async with self._sessions.begin() as s:
            # Before any post row: the erasures' lock, then their fences.
            refused = await refused_clicks(s, self._dialect, self._refs, clicks, member_ids)
            by_post: dict[int, list[int]] = {}
            for i, p in enumerate(batch):
                if i in refused:
                    results[i] = AnswerOutcome(AnswerStatus.ERASED)
                else:
                    by_post.setdefault(p.post_id, []).append(i)
            grouped: dict[int, list[AnswerOutcome]] | None = None
            if len(by_post) > 1:
                # Clicks on many posts (a burst across workspaces or channels): every post
                # in a handful of statements, not five round trips each.
                try:
                    async with s.begin_nested():
                        grouped = await self._commit_posts(s, by_post, batch, member_ids)
                except Exception as exc:
                    if transient_reason(exc) is not None:
                        raise  # the whole batch is retried
                    # Rolled back: post by post, so that one post that fails fails alone.
                    log.warning(
                        "answers on %d posts failed together (%s): committing post by post",
                        len(by_post),
                        type(exc).__name__,
                    )
            for post_id in sorted(by_post):  # one global lock order across replicas
                idxs = by_post[post_id]
                outcomes: list[AnswerOutcome | Exception]
                if grouped is not None:
                    outcomes = list(grouped[post_id])
                else:
                    try:
                        async with s.begin_nested():
                            outcomes = list(
                                await self._commit_post(s, post_id, batch, idxs, member_ids)
                            )
                    except Exception as exc:
                        if transient_reason(exc) is not None:
                            raise  # the whole batch is retried
                        log.exception("answers on post %s failed", post_id)
                        outcomes = [exc] * len(idxs)
                for i, o in zip(idxs, outcomes, strict=True):
                    results[i] = o
        return results

    async def _commit_post(
        self,
        s: AsyncSession,
        post_id: int,
        batch: list[_Pending],
        idxs: list[int],
        member_ids: dict[str, int],
    ) -> list[AnswerOutcome]:
        """One post's clicks in statements of its own: the one-post burst's hot path
        (`_commit_posts`, the grouped form, measured slower for a single post)."""
        # Lock the post row: a concurrent close waits for us, or we see it closed.
        found = (
            await s.execute(
                select(PostRow, ChannelRow)
                .join(ChannelRow, ChannelRow.id == PostRow.channel_id)
                .where(PostRow.id == post_id)
                .with_for_update(of=PostRow)
                .execution_options(populate_existing=True)
            )
        ).first()
        plan = _plan(
            post_id, None if found is None else (found[0], found[1]), batch, idxs, member_ids
        )
        if plan.done is not None:
            return plan.done
        assert plan.row is not None
        inserted: set[int] = set()
        if params := plan.params():
            stmt = (
                insert(self._dialect, AnswerRow)
                .on_conflict_do_nothing(index_elements=["post_id", "member_id"])
                .returning(AnswerRow.member_id)
            )
            # executemany with RETURNING ("insertmanyvalues"): batched, cached statement.
            inserted = set((await s.execute(stmt, params)).scalars())
        count = plan.row.answer_count
        if inserted:
            count = (
                await s.execute(
                    update(PostRow)
                    .where(PostRow.id == post_id)
                    .values(answer_count=PostRow.answer_count + len(inserted))
                    .returning(PostRow.answer_count)
                )
            ).scalar_one()
        if plan.practice and inserted:  # move the member's Leitner card; close the post
            await self._practice(s, plan, inserted)
        # The choice that counts for members who had answered before this batch.
        others = plan.others(batch, member_ids, inserted)
        prior_rows: dict[int, tuple[int, bool, float | None]] = {}
        if others:
            prior = await s.execute(
                select(
                    AnswerRow.member_id, AnswerRow.choice, AnswerRow.correct, AnswerRow.value
                ).where(AnswerRow.post_id == post_id, AnswerRow.member_id.in_(others))
            )
            prior_rows = {mid: (choice, ok, val) for mid, choice, ok, val in prior}
        return plan.outcomes(batch, member_ids, inserted, count, prior_rows)

    async def _commit_posts(
        self,
        s: AsyncSession,
        by_post: dict[int, list[int]],
        batch: list[_Pending],
        member_ids: dict[str, int],
    ) -> dict[int, list[AnswerOutcome]]:
        """`_commit_post` for many posts at once, with the same outcomes: the post rows
        locked in one statement (ascending ids: the global lock order), every answer in one
        insert, the counts in one executemany, the earlier answers in one read."""
        ids = sorted(by_post)
        rows = await s.execute(
            select(PostRow, ChannelRow)
            .join(ChannelRow, ChannelRow.id == PostRow.channel_id)
            .where(PostRow.id.in_(ids))
            .order_by(PostRow.id)
            .with_for_update(of=PostRow)
            .execution_options(populate_existing=True)
        )
        found = {row.id: (row, ch) for row, ch in rows}
        plans = [_plan(pid, found.get(pid), batch, by_post[pid], member_ids) for pid in ids]
        open_plans = [p for p in plans if p.done is None]
        inserted: dict[int, set[int]] = {p.post_id: set() for p in open_plans}
        params = [param for p in open_plans for param in p.params()]
        if params:
            stmt = (
                insert(self._dialect, AnswerRow)
                .on_conflict_do_nothing(index_elements=["post_id", "member_id"])
                .returning(AnswerRow.post_id, AnswerRow.member_id)
            )
            for pid, mid in await s.execute(stmt, params):
                inserted[pid].add(mid)
        counts: dict[int, int] = {}
        bumps = []
        for p in open_plans:
            assert p.row is not None
            # The row is locked (FOR UPDATE; SQLite's writer holds the database): its
            # count plus ours is what the update leaves.
            counts[p.post_id] = p.row.answer_count + len(inserted[p.post_id])
            if inserted[p.post_id]:
                bumps.append({"b_id": p.post_id, "b_n": len(inserted[p.post_id])})
        if bumps:
            conn = await s.connection()
            await conn.execute(
                update(PostRow)
                .where(PostRow.id == bindparam("b_id"))
                .values(answer_count=PostRow.answer_count + bindparam("b_n")),
                bumps,
            )
        for p in open_plans:
            if p.practice and inserted[p.post_id]:
                await self._practice(s, p, inserted[p.post_id])
        others = {
            (p.post_id, mid)
            for p in open_plans
            for mid in p.others(batch, member_ids, inserted[p.post_id])
        }
        prior_rows: dict[int, dict[int, tuple[int, bool, float | None]]] = {
            p.post_id: {} for p in open_plans
        }
        if others:
            prior = await s.execute(
                select(
                    AnswerRow.post_id,
                    AnswerRow.member_id,
                    AnswerRow.choice,
                    AnswerRow.correct,
                    AnswerRow.value,
                ).where(
                    AnswerRow.post_id.in_(sorted({pid for pid, _ in others})),
                    AnswerRow.member_id.in_(sorted({mid for _, mid in others})),
                )
            )
            for pid, mid, choice, ok, val in prior:
                if (pid, mid) in others:
                    prior_rows[pid][mid] = (choice, ok, val)
        out: dict[int, list[AnswerOutcome]] = {}
        for p in plans:
            if p.done is not None:
                out[p.post_id] = p.done
            else:
                out[p.post_id] = p.outcomes(
                    batch, member_ids, inserted[p.post_id], counts[p.post_id], prior_rows[p.post_id]
                )
        return out

    async def _practice(self, s: AsyncSession, plan: _Plan, inserted: set[int]) -> None:
        """Move the member's Leitner card; close the practice post."""
        assert plan.row is not None
        (mid,) = inserted
        p = plan.first[mid]
        await record_practice_answer(
            s, plan.row, mid, p.is_correct(plan.row.correct_choice), p.at, self._dialect
        )

    async def for_post(self, post_id: int) -> list[Answer]:
        async with self._sessions() as s:
            rows = await s.execute(
                select(MemberRow, AnswerRow.choice, AnswerRow.correct, AnswerRow.answered_at)
                .join(MemberRow, MemberRow.id == AnswerRow.member_id)
                .where(AnswerRow.post_id == post_id)
                .order_by(AnswerRow.answered_at, AnswerRow.id)
            )
            return [Answer(post_id, user_ref(m), c, ok, at) for m, c, ok, at in rows]

    async def distribution(self, post_id: int, choices: int) -> tuple[int, ...]:
        async with self._sessions() as s:
            rows = await s.execute(
                select(AnswerRow.choice, func.count())
                .where(AnswerRow.post_id == post_id)
                .group_by(AnswerRow.choice)
            )
            counts = {choice: n for choice, n in rows}
        return tuple(counts.get(i, 0) for i in range(choices))

    async def values(self, post_id: int) -> list[float]:
        async with self._sessions() as s:
            rows = await s.execute(
                select(AnswerRow.value)
                .where(AnswerRow.post_id == post_id, AnswerRow.value.is_not(None))
                .order_by(AnswerRow.answered_at, AnswerRow.id)
            )
            return [float(v) for (v,) in rows if v is not None]

    async def first_correct(self, post_id: int) -> UserRef | None:
        async with self._sessions() as s:
            m = (
                await s.execute(
                    select(MemberRow)
                    .join(AnswerRow, AnswerRow.member_id == MemberRow.id)
                    .where(AnswerRow.post_id == post_id, AnswerRow.correct.is_(True))
                    .order_by(AnswerRow.answered_at, AnswerRow.id)
                    .limit(1)
                )
            ).scalar_one_or_none()
        return user_ref(m) if m is not None else None


@dataclass(slots=True)
class _Plan:
    """What a batch's clicks on one locked post will do: `done` when nothing is written
    (an unknown or closed post), else the first valid click of each member (`first`) to
    insert and why the others are refused."""

    post_id: int
    idxs: list[int]
    row: PostRow | None = None
    ch: ChannelRow | None = None
    done: list[AnswerOutcome] | None = None
    foreign: set[int] = field(default_factory=set)
    late: set[int] = field(default_factory=set)
    strangers: set[int] = field(default_factory=set)  # clicks on someone else's practice
    first: dict[int, _Pending] = field(default_factory=dict)
    idxs_here: list[int] = field(default_factory=list)
    practice: bool = False

    def params(self) -> list[dict[str, object]]:
        assert self.row is not None
        return [
            {
                "post_id": self.post_id,
                "member_id": mid,
                "choice": p.choice,
                "correct": p.is_correct(self.row.correct_choice),
                "answered_at": p.at,
                "value": p.value,
            }
            for mid, p in self.first.items()
        ]

    def others(
        self, batch: list[_Pending], member_ids: dict[str, int], inserted: set[int]
    ) -> list[int]:
        """Members whose counting answer is an earlier one (read from the database)."""
        assert self.row is not None
        return [mid for mid in self.first if mid not in inserted] + [
            member_ids[batch[i].user.key]
            for i in self.idxs_here
            if not batch[i].valid_for(self.row.choice_count)
        ]

    def outcomes(
        self,
        batch: list[_Pending],
        member_ids: dict[str, int],
        inserted: set[int],
        count: int,
        prior_rows: dict[int, tuple[int, bool, float | None]],
    ) -> list[AnswerOutcome]:
        row, ch = self.row, self.ch
        assert row is not None and ch is not None
        post = replace(to_post(row, ch), answer_count=count)
        out: list[AnswerOutcome] = []
        for i in self.idxs:
            p = batch[i]
            mid = member_ids[p.user.key]
            if i in self.late:
                out.append(AnswerOutcome(AnswerStatus.CLOSED, post=post))
            elif i in self.foreign:
                out.append(AnswerOutcome(AnswerStatus.WRONG_CHANNEL))
            elif mid in self.strangers:
                out.append(AnswerOutcome(AnswerStatus.UNKNOWN_POST))
            elif mid in inserted:  # this click, or the batch's earlier one, counts
                counted = self.first[mid]
                status = AnswerStatus.RECORDED if counted is p else AnswerStatus.ALREADY_ANSWERED
                ok = counted.is_correct(row.correct_choice)
                out.append(_outcome(status, post, counted.choice, ok, counted.value))
            elif mid in prior_rows:
                choice, ok, val = prior_rows[mid]
                out.append(_outcome(AnswerStatus.ALREADY_ANSWERED, post, choice, ok, val))
            else:
                out.append(
                    AnswerOutcome(AnswerStatus.INVALID_CHOICE, post=post, answer_count=count)
                )
        return out


def _plan(
    post_id: int,
    found: tuple[PostRow, ChannelRow] | None,
    batch: list[_Pending],
    idxs: list[int],
    member_ids: dict[str, int],
) -> _Plan:
    """Sort the clicks on a locked post (`found`; None: no such post)."""
    plan = _Plan(post_id, idxs)
    if found is None:
        plan.done = [AnswerOutcome(AnswerStatus.UNKNOWN_POST) for _ in idxs]
        return plan
    row, ch = plan.row, plan.ch = found
    post = to_post(row, ch)
    foreign = {i for i in idxs if not _same_channel(batch[i].channel, post.channel)}
    idxs_here = [i for i in idxs if i not in foreign]
    if row.state != PostState.OPEN.value:
        status = (
            AnswerStatus.CLOSED
            if row.state == PostState.CLOSED.value
            else AnswerStatus.UNKNOWN_POST
        )
        plan.done = [
            AnswerOutcome(AnswerStatus.WRONG_CHANNEL)
            if i in foreign
            else AnswerOutcome(status, post=post)
            for i in idxs
        ]
        return plan
    if row.kind in _LIVE and row.closes_at is not None:
        # A live question takes clicks up to its deadline, not up to its close (the
        # round's next step closes it a moment later).
        late = {i for i in idxs_here if batch[i].at >= row.closes_at}
        if late:
            idxs_here = [i for i in idxs_here if i not in late]
            foreign |= late  # answered below as closed, not as another channel's
        plan.late = late
    plan.foreign = foreign
    plan.idxs_here = idxs_here
    plan.practice = row.kind == PostKind.PRACTICE.value
    for i in idxs_here:
        p = batch[i]
        if plan.practice and member_ids[p.user.key] != row.practice_member_id:
            plan.strangers.add(member_ids[p.user.key])
        elif p.valid_for(row.choice_count):
            plan.first.setdefault(member_ids[p.user.key], p)
    return plan


def _resolve(p: _Pending, result: AnswerOutcome | BaseException) -> None:
    if p.future.done():
        return  # the caller gave up (cancelled)
    if isinstance(result, BaseException):
        p.future.set_exception(result)
    else:
        p.future.set_result(result)


def _same_channel(click: ChannelRef | None, post: ChannelRef) -> bool:
    """A click without a channel (the console, the core's own calls) is not checked."""
    return click is None or click == post


def _outcome(
    status: AnswerStatus, post: Post, choice: int, correct: bool, value: float | None
) -> AnswerOutcome:
    return AnswerOutcome(
        status,
        post=post,
        choice=choice,
        correct=correct,
        answer_count=post.answer_count,
        value=value,
    )
