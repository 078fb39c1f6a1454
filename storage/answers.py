"""Answers, recorded with group commit.

A transaction per answer tops out near 1,000/s on SQLite; a burst of clicks on a popular
question needs more. Concurrent `record` calls are queued and one writer task commits
them together: per post it locks the post row (checking it is open), inserts the answers
with ON CONFLICT DO NOTHING on (post, member) — first answer wins, exactly as with a
transaction each — and bumps the post's answer count. Every caller gets its own outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.domain import (
    Answer,
    AnswerOutcome,
    AnswerStatus,
    Platform,
    Post,
    PostKind,
    PostState,
    UserRef,
)
from storage._sql import insert
from storage.models import AnswerRow, ChannelRow, MemberRow, PostRow
from storage.posts import to_post
from storage.practice import record_practice_answer
from storage.refs import RefResolver

log = logging.getLogger(__name__)

MAX_BATCH = 2000


@dataclass(slots=True)
class _Pending:
    post_id: int
    user: UserRef
    choice: int
    at: datetime
    future: asyncio.Future[AnswerOutcome]


class SqlAnswerRepository:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], refs: RefResolver) -> None:
        self._sessions = sessions
        self._refs = refs
        self._dialect = sessions.kw["bind"].dialect.name
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None

    async def record(self, post_id: int, user: UserRef, choice: int, at: datetime) -> AnswerOutcome:
        """Record `user`'s answer unless they answered this post already (first one counts)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[AnswerOutcome] = loop.create_future()
        self._queue.put_nowait(_Pending(post_id, user, choice, at, fut))
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._write_loop(), name="answer-writer")
        return await fut

    async def aclose(self) -> None:
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
            self._writer = None

    async def _write_loop(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while len(batch) < MAX_BATCH and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                outcomes = await self._commit(batch)
            except Exception as exc:  # every waiter must hear about it
                log.exception("answer batch of %d failed", len(batch))
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(exc)
                continue
            for p, outcome in zip(batch, outcomes, strict=True):
                if not p.future.done():
                    p.future.set_result(outcome)

    async def _commit(self, batch: list[_Pending]) -> list[AnswerOutcome]:
        by_post: dict[int, list[int]] = {}
        for i, p in enumerate(batch):
            by_post.setdefault(p.post_id, []).append(i)
        outcomes: list[AnswerOutcome | None] = [None] * len(batch)
        async with self._sessions.begin() as s:
            member_ids = await self._refs.member_ids(s, (p.user for p in batch))
            for post_id, idxs in by_post.items():
                for i, o in zip(
                    idxs, await self._commit_post(s, post_id, batch, idxs, member_ids), strict=True
                ):
                    outcomes[i] = o
        return [o for o in outcomes if o is not None]

    async def _commit_post(
        self,
        s: AsyncSession,
        post_id: int,
        batch: list[_Pending],
        idxs: list[int],
        member_ids: dict[str, int],
    ) -> list[AnswerOutcome]:
        # Lock the post row: a concurrent close waits for us, or we see it closed.
        found = (
            await s.execute(
                select(PostRow, ChannelRow)
                .join(ChannelRow, ChannelRow.id == PostRow.channel_id)
                .where(PostRow.id == post_id)
                .with_for_update(of=PostRow)
            )
        ).first()
        if found is None:
            return [AnswerOutcome(AnswerStatus.UNKNOWN_POST) for _ in idxs]
        row, ch = found
        post = to_post(row, ch)
        if row.state != PostState.OPEN.value:
            status = (
                AnswerStatus.CLOSED
                if row.state == PostState.CLOSED.value
                else AnswerStatus.UNKNOWN_POST
            )
            return [AnswerOutcome(status, post=post) for _ in idxs]

        first: dict[int, _Pending] = {}
        practice = row.kind == PostKind.PRACTICE.value
        strangers: set[int] = set()  # clicks on someone else's practice question
        for i in idxs:
            p = batch[i]
            if practice and member_ids[p.user.key] != row.practice_member_id:
                strangers.add(member_ids[p.user.key])
            elif 0 <= p.choice < row.choice_count:
                first.setdefault(member_ids[p.user.key], p)
        inserted: set[int] = set()
        if first:
            stmt = (
                insert(self._dialect, AnswerRow)
                .on_conflict_do_nothing(index_elements=["post_id", "member_id"])
                .returning(AnswerRow.member_id)
            )
            params = [
                {
                    "post_id": post_id,
                    "member_id": mid,
                    "choice": p.choice,
                    "correct": p.choice == row.correct_choice,
                    "answered_at": p.at,
                }
                for mid, p in first.items()
            ]
            # executemany with RETURNING ("insertmanyvalues"): batched, cached statement.
            inserted = set((await s.execute(stmt, params)).scalars())
        count = row.answer_count
        if inserted:
            count = (
                await s.execute(
                    update(PostRow)
                    .where(PostRow.id == post_id)
                    .values(answer_count=PostRow.answer_count + len(inserted))
                    .returning(PostRow.answer_count)
                )
            ).scalar_one()
        if practice and inserted:  # move the member's Leitner card; close the post
            (mid,) = inserted
            p = first[mid]
            correct = p.choice == row.correct_choice
            await record_practice_answer(s, row, mid, correct, p.at, self._dialect)
        # The choice that counts for members who had answered before this batch.
        earlier: dict[int, int] = {}
        others = [mid for mid in first if mid not in inserted] + [
            member_ids[batch[i].user.key] for i in idxs if batch[i].choice >= row.choice_count
        ]
        if others:
            prior = await s.execute(
                select(AnswerRow.member_id, AnswerRow.choice).where(
                    AnswerRow.post_id == post_id, AnswerRow.member_id.in_(others)
                )
            )
            earlier = {mid: choice for mid, choice in prior}

        post = replace(to_post(row, ch), answer_count=count)
        out: list[AnswerOutcome] = []
        for i in idxs:
            p = batch[i]
            mid = member_ids[p.user.key]
            if mid in strangers:
                out.append(AnswerOutcome(AnswerStatus.UNKNOWN_POST))
            elif mid in inserted and first[mid] is p:
                out.append(_outcome(AnswerStatus.RECORDED, post, p.choice, row.correct_choice))
            elif mid in inserted or mid in earlier:
                counted = first[mid].choice if mid in inserted else earlier[mid]
                out.append(
                    _outcome(AnswerStatus.ALREADY_ANSWERED, post, counted, row.correct_choice)
                )
            else:
                out.append(
                    AnswerOutcome(AnswerStatus.INVALID_CHOICE, post=post, answer_count=count)
                )
        return out

    async def for_post(self, post_id: int) -> list[Answer]:
        async with self._sessions() as s:
            rows = await s.execute(
                select(MemberRow, AnswerRow.choice, AnswerRow.correct, AnswerRow.answered_at)
                .join(MemberRow, MemberRow.id == AnswerRow.member_id)
                .where(AnswerRow.post_id == post_id)
                .order_by(AnswerRow.answered_at, AnswerRow.id)
            )
            return [Answer(post_id, _user(m), c, ok, at) for m, c, ok, at in rows]

    async def distribution(self, post_id: int, choices: int) -> tuple[int, ...]:
        async with self._sessions() as s:
            rows = await s.execute(
                select(AnswerRow.choice, func.count())
                .where(AnswerRow.post_id == post_id)
                .group_by(AnswerRow.choice)
            )
            counts = {choice: n for choice, n in rows}
        return tuple(counts.get(i, 0) for i in range(choices))

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
        return _user(m) if m is not None else None


def _user(m: MemberRow) -> UserRef:
    return UserRef(Platform(m.platform), m.workspace, m.user_id, m.display_name)


def _outcome(status: AnswerStatus, post: Post, choice: int, correct_choice: int) -> AnswerOutcome:
    return AnswerOutcome(
        status,
        post=post,
        choice=choice,
        correct=choice == correct_choice,
        answer_count=post.answer_count,
    )
