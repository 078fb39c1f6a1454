"""Team packs: a workspace's submitted and imported questions, their review, retired
questions and flags (`bot.team.TeamPackRepository`).

Every change to what a workspace's picks may draw (an approval, an approved import, a
retirement) bumps `team_packs.revision` in the same transaction; a pick reads only that
number and reloads the pack when it moved, so every replica sees a retirement at its
next pick. Decisions are conditional updates (`WHERE state = 'pending'`): of two admins
approving at once, one wins and the other is told.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import aliased

from bot.bank import question_from_dict, question_to_dict
from bot.clock import Clock
from bot.domain import ChannelRef, MessageRef, Platform, Post, Question, UserRef
from bot.team import (
    FlaggedQuestion,
    FlagReason,
    Origin,
    PackState,
    SubmissionState,
    TeamQuestion,
    Workspace,
)
from storage._sql import RefRepository, insert
from storage.models import (
    ChannelRow,
    FlagRow,
    MemberRow,
    RetiredQuestionRow,
    TeamPackRow,
    TeamQuestionRow,
)
from storage.refs import RefResolver, channel_ref, user_ref

_Author = aliased(MemberRow)
_Decider = aliased(MemberRow)
_Where = aliased(ChannelRow)
_Review = aliased(ChannelRow)


def _in(model: Any, ws: Workspace) -> tuple[Any, ...]:
    return (model.platform == str(ws.platform), model.workspace == ws.id)


class SqlTeamPackRepository(RefRepository):
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], refs: RefResolver, clock: Clock
    ) -> None:
        super().__init__(sessions, refs)
        self._clock = clock  # when a channel first seen here was created
        self._parsed: dict[str, Question] = {}  # content hash -> question (immutable)

    # -- questions -------------------------------------------------------------------

    async def add(
        self,
        workspace: Workspace,
        questions: Sequence[Question],
        *,
        origin: Origin,
        approved: bool,
        now: datetime,
        author: UserRef | None = None,
        channel: ChannelRef | None = None,
    ) -> list[TeamQuestion]:
        if not questions:
            return []
        state = SubmissionState.APPROVED if approved else SubmissionState.PENDING
        async with self._sessions.begin() as s:
            author_id = (await self._refs.member_ids(s, [author]))[author.key] if author else None
            channel_id = await self._refs.channel_id(s, channel, now) if channel else None
            unique = {q.content_hash: q for q in questions}
            rows = [
                {
                    "platform": str(workspace.platform),
                    "workspace": workspace.id,
                    "question_id": q.id,
                    "question_hash": h,
                    "data": json.dumps(question_to_dict(q), ensure_ascii=False),
                    "state": str(state),
                    "origin": str(origin),
                    "author_member_id": author_id,
                    "channel_id": channel_id,
                    "created_at": now,
                    "decided_at": now if approved else None,
                }
                for h, q in unique.items()
            ]
            stmt = (
                insert(self._dialect, TeamQuestionRow)
                .on_conflict_do_nothing(index_elements=["platform", "workspace", "question_hash"])
                .returning(TeamQuestionRow.id, TeamQuestionRow.question_hash)
            )
            added = (await s.execute(stmt, rows)).all()
            if added and approved:
                await self._bump(s, workspace)
        return [
            TeamQuestion(
                sid,
                workspace,
                unique[h],
                state,
                origin,
                now,
                author,
                channel,
                decided_at=now if approved else None,
            )
            for sid, h in sorted(added)
        ]

    async def find(self, workspace: Workspace, content_hash: str) -> TeamQuestion | None:
        found = await self._select(
            *_in(TeamQuestionRow, workspace), TeamQuestionRow.question_hash == content_hash
        )
        return found[0] if found else None

    async def get(self, submission_id: int) -> TeamQuestion | None:
        found = await self._select(TeamQuestionRow.id == submission_id)
        return found[0] if found else None

    async def listing(
        self, workspace: Workspace, state: SubmissionState | None = None, limit: int | None = None
    ) -> list[TeamQuestion]:
        where = list(_in(TeamQuestionRow, workspace))
        if state is not None:
            where.append(TeamQuestionRow.state == str(state))
        return await self._select(*where, limit=limit)

    async def decide(
        self,
        submission_id: int,
        workspace: Workspace,
        state: SubmissionState,
        by: UserRef,
        now: datetime,
        reason: str = "",
    ) -> tuple[bool, TeamQuestion | None]:
        async with self._sessions.begin() as s:
            by_id = (await self._refs.member_ids(s, [by]))[by.key]
            done = await s.execute(
                update(TeamQuestionRow)
                .where(
                    TeamQuestionRow.id == submission_id,
                    *_in(TeamQuestionRow, workspace),
                    TeamQuestionRow.state == SubmissionState.PENDING.value,
                )
                .values(state=str(state), decided_at=now, decided_by_member_id=by_id, reason=reason)
            )
            won = bool(done.rowcount)  # type: ignore[attr-defined]
            if won and state is SubmissionState.APPROVED:
                await self._bump(s, workspace)
        fresh = await self.get(submission_id)
        if fresh is not None and fresh.workspace != workspace:
            fresh = None  # another workspace's question: not theirs to see
        return won, fresh

    async def set_review_message(self, submission_id: int, ref: MessageRef) -> None:
        async with self._sessions.begin() as s:
            cid = await self._refs.channel_id(s, ref.channel, self._clock.now())
            await s.execute(
                update(TeamQuestionRow)
                .where(TeamQuestionRow.id == submission_id)
                .values(review_channel_id=cid, review_message_id=ref.message)
            )

    async def _select(self, *where: Any, limit: int | None = None) -> list[TeamQuestion]:
        stmt = (
            select(TeamQuestionRow, _Author, _Decider, _Where, _Review)
            .outerjoin(_Author, _Author.id == TeamQuestionRow.author_member_id)
            .outerjoin(_Decider, _Decider.id == TeamQuestionRow.decided_by_member_id)
            .outerjoin(_Where, _Where.id == TeamQuestionRow.channel_id)
            .outerjoin(_Review, _Review.id == TeamQuestionRow.review_channel_id)
            .where(*where)
            .order_by(TeamQuestionRow.id)
            .limit(limit)
        )
        async with self._sessions() as s:
            rows = (await s.execute(stmt)).all()
        return [self._team_question(*row) for row in rows]

    def _team_question(
        self,
        row: TeamQuestionRow,
        author: MemberRow | None,
        decider: MemberRow | None,
        where: ChannelRow | None,
        review: ChannelRow | None,
    ) -> TeamQuestion:
        ws = Workspace(Platform(row.platform), row.workspace)
        message = None
        if review is not None and row.review_message_id:
            message = MessageRef(channel_ref(review), row.review_message_id)
        return TeamQuestion(
            row.id,
            ws,
            self._question(row.question_hash, row.data),
            SubmissionState(row.state),
            Origin(row.origin),
            row.created_at,
            _member(author),
            channel_ref(where) if where is not None else None,
            row.decided_at,
            _member(decider),
            row.reason,
            message,
        )

    def _question(self, content_hash: str, data: str) -> Question:
        if (q := self._parsed.get(content_hash)) is None:
            q = replace(question_from_dict(json.loads(data)), content_hash=content_hash)
            self._parsed[content_hash] = q
        return q

    # -- what picks draw from --------------------------------------------------------

    async def state(self, workspace: Workspace, known: int | None = None) -> PackState:
        async with self._sessions() as s:
            revision = (
                await s.execute(select(TeamPackRow.revision).where(*_in(TeamPackRow, workspace)))
            ).scalar_one_or_none() or 0
            if revision == known:
                return PackState(revision)
            approved = await s.execute(
                select(TeamQuestionRow.question_hash, TeamQuestionRow.data)
                .where(
                    *_in(TeamQuestionRow, workspace),
                    TeamQuestionRow.state == SubmissionState.APPROVED.value,
                )
                .order_by(TeamQuestionRow.id)
            )
            questions = tuple(self._question(h, d) for h, d in approved)
            retired = await s.execute(
                select(RetiredQuestionRow.question_id).where(*_in(RetiredQuestionRow, workspace))
            )
            return PackState(revision, questions, frozenset(retired.scalars()))

    async def _bump(self, s: AsyncSession, workspace: Workspace) -> None:
        ins = insert(self._dialect, TeamPackRow)
        await s.execute(
            ins.values(
                platform=str(workspace.platform), workspace=workspace.id, revision=1
            ).on_conflict_do_update(
                index_elements=["platform", "workspace"],
                set_={"revision": TeamPackRow.revision + 1},
            )
        )

    async def retire(
        self, workspace: Workspace, question_id: str, by: UserRef | None, now: datetime
    ) -> bool:
        async with self._sessions.begin() as s:
            by_id = (await self._refs.member_ids(s, [by]))[by.key] if by else None
            done = await s.execute(
                insert(self._dialect, RetiredQuestionRow)
                .values(
                    platform=str(workspace.platform),
                    workspace=workspace.id,
                    question_id=question_id,
                    retired_at=now,
                    retired_by_member_id=by_id,
                )
                .on_conflict_do_nothing()
                .returning(RetiredQuestionRow.question_id)
            )
            if done.first() is None:
                return False
            await self._bump(s, workspace)
            return True

    async def restore(self, workspace: Workspace, question_id: str) -> bool:
        async with self._sessions.begin() as s:
            done = await s.execute(
                delete(RetiredQuestionRow).where(
                    *_in(RetiredQuestionRow, workspace),
                    RetiredQuestionRow.question_id == question_id,
                )
            )
            if not done.rowcount:  # type: ignore[attr-defined]
                return False
            await self._bump(s, workspace)
            return True

    # -- the review channel ----------------------------------------------------------

    async def review_channel(self, workspace: Workspace) -> ChannelRef | None:
        async with self._sessions() as s:
            row = (
                await s.execute(
                    select(ChannelRow)
                    .join(TeamPackRow, TeamPackRow.review_channel_id == ChannelRow.id)
                    .where(*_in(TeamPackRow, workspace))
                )
            ).scalar_one_or_none()
        return channel_ref(row) if row is not None else None

    async def set_review_channel(self, channel: ChannelRef) -> None:
        async with self._sessions.begin() as s:
            cid = await self._refs.channel_id(s, channel, self._clock.now())
            ins = insert(self._dialect, TeamPackRow)
            await s.execute(
                ins.values(
                    platform=str(channel.platform),
                    workspace=channel.workspace,
                    revision=0,
                    review_channel_id=cid,
                ).on_conflict_do_update(
                    index_elements=["platform", "workspace"], set_={"review_channel_id": cid}
                )
            )

    # -- flags -----------------------------------------------------------------------

    async def flag(
        self,
        post: Post,
        question: Question,
        user: UserRef,
        reason: FlagReason,
        note: str,
        now: datetime,
    ) -> bool:
        async with self._sessions.begin() as s:
            mid = (await self._refs.member_ids(s, [user]))[user.key]
            done = await s.execute(
                insert(self._dialect, FlagRow)
                .values(
                    platform=str(post.channel.platform),
                    workspace=post.channel.workspace,
                    question_id=question.id,
                    question_hash=question.content_hash,
                    post_id=post.id,
                    member_id=mid,
                    reason=str(reason),
                    note=note,
                    created_at=now,
                )
                .on_conflict_do_nothing(index_elements=["post_id", "member_id"])
                .returning(FlagRow.id)
            )
            return done.first() is not None

    async def flagged(self, workspace: Workspace, limit: int = 10) -> list[FlaggedQuestion]:
        async with self._sessions() as s:
            counts = await s.execute(
                select(FlagRow.question_id, FlagRow.reason, func.count(), func.max(FlagRow.id))
                .where(*_in(FlagRow, workspace))
                .group_by(FlagRow.question_id, FlagRow.reason)
            )
            reasons: dict[str, dict[FlagReason, int]] = defaultdict(dict)
            latest: dict[str, int] = {}
            for qid, reason, n, last in counts:
                reasons[qid][FlagReason(reason)] = n
                latest[qid] = max(latest.get(qid, 0), last)
            top = sorted(reasons, key=lambda q: (-sum(reasons[q].values()), q))[:limit]
            if not top:
                return []
            last_rows = {
                r.question_id: r
                for r in (
                    await s.execute(select(FlagRow).where(FlagRow.id.in_([latest[q] for q in top])))
                ).scalars()
            }
            retired = set(
                (
                    await s.execute(
                        select(RetiredQuestionRow.question_id).where(
                            *_in(RetiredQuestionRow, workspace),
                            RetiredQuestionRow.question_id.in_(top),
                        )
                    )
                ).scalars()
            )
        return [
            FlaggedQuestion(
                q,
                last_rows[q].question_hash,
                dict(reasons[q]),
                last_rows[q].note,
                q in retired,
            )
            for q in top
        ]


def _member(row: MemberRow | None) -> UserRef | None:
    if row is None:
        return None
    return user_ref(row)


__all__ = ["SqlTeamPackRepository"]
