"""Practice: Leitner cards per (member, question) and private practice posts.

A practice answer is recorded by the answer writer like any other; in the same
transaction `record_practice_answer` moves the member's card and closes the post.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.domain import ChannelRef, Locale, Post, PostDraft, PostKind, PostState, Question, UserRef
from bot.practice import PracticeCard, review
from storage._sql import RefRepository, added_id, insert
from storage.models import MemberRow, PostRow, PracticeCardRow
from storage.posts import post_row, post_select, to_post
from storage.refs import is_member


async def record_practice_answer(
    s: AsyncSession, post: PostRow, member_id: int, correct: bool, at: datetime, dialect: str
) -> None:
    """Move the member's card for the post's question, and close the practice post."""
    box = (
        await s.execute(
            select(PracticeCardRow.box).where(
                PracticeCardRow.member_id == member_id,
                PracticeCardRow.question_id == post.question_id,
            )
        )
    ).scalar_one_or_none()
    new_box, due_at = review(box, correct, at)
    values = {"box": new_box, "due_at": due_at, "last_answered_at": at}
    await s.execute(
        insert(dialect, PracticeCardRow)
        .values(member_id=member_id, question_id=post.question_id, **values)
        .on_conflict_do_update(index_elements=["member_id", "question_id"], set_=values)
    )
    await s.execute(
        update(PostRow)
        .where(PostRow.id == post.id, PostRow.state == PostState.OPEN.value)
        .values(state=PostState.CLOSED.value, closed_at=at)
    )


class SqlPracticeRepository(RefRepository):
    async def cards_of(self, users: Sequence[UserRef]) -> dict[str, list[PracticeCard]]:
        """`cards` of many members of one workspace (by member key; none: absent), read
        in one statement."""
        if not users:
            return {}
        out: dict[str, list[PracticeCard]] = {}
        first = users[0]
        async with self._sessions() as s:
            rows = await s.execute(
                select(PracticeCardRow, MemberRow.user_id)
                .join(MemberRow, MemberRow.id == PracticeCardRow.member_id)
                .where(
                    MemberRow.platform == str(first.platform),
                    MemberRow.workspace == first.workspace,
                    MemberRow.user_id.in_(sorted({u.user for u in users})),
                )
                .order_by(PracticeCardRow.question_id)
            )
            for c, uid in rows:
                key = UserRef(first.platform, first.workspace, uid).key
                card = PracticeCard(c.question_id, c.box, c.due_at, c.last_answered_at)
                out.setdefault(key, []).append(card)
        return out

    async def cards(self, user: UserRef) -> list[PracticeCard]:
        async with self._sessions() as s:
            rows = await s.execute(
                select(PracticeCardRow)
                .join(MemberRow, MemberRow.id == PracticeCardRow.member_id)
                .where(
                    *is_member(user),
                )
                .order_by(PracticeCardRow.question_id)
            )
            return [
                PracticeCard(c.question_id, c.box, c.due_at, c.last_answered_at)
                for c in rows.scalars()
            ]

    async def open_post(
        self, channel: ChannelRef, user: UserRef, question: Question, locale: Locale, now: datetime
    ) -> Post:
        async with self._sessions.begin() as s:
            cid = await self._refs.channel_id(s, channel, now)
            mid = (await self._refs.member_ids(s, [user]))[user.key]
            # One practice question at a time: a bare answer in the console goes to it.
            await s.execute(
                update(PostRow)
                .where(
                    PostRow.practice_member_id == mid,
                    PostRow.kind == PostKind.PRACTICE.value,
                    PostRow.state == PostState.OPEN.value,
                )
                .values(state=PostState.CLOSED.value, closed_at=now)
            )
            # Never closed by the clock (no closes_at): the answer closes it.
            draft = PostDraft.of(channel, question, locale, now, None)
            row = post_row(cid, draft, PostKind.PRACTICE, PostState.OPEN, practice_member_id=mid)
            post_id = await added_id(s, row)
            found = (await s.execute(post_select().where(PostRow.id == post_id))).one()
            return to_post(*found)
