"""Posts: claimed before they are sent, opened when the platform message is stored, closed
exactly once by a conditional update, and marked revealed once the reveal is posted (a
reveal that failed is retried under a lease, as a send is)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, delete, func, literal_column, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import aliased

from bot.domain import ChannelRef, Locale, MessageRef, Post, PostDraft, PostKind, PostState, UserRef
from storage._sql import RefRepository, added_id, from_row
from storage.models import ChannelRow, MemberRow, PostRow, UtcDateTime
from storage.refs import channel_ref, is_channel, user_ref
from storage.score_fold import fold_post

_Practice = aliased(MemberRow)
_NO_REVEAL = (PostKind.PRACTICE.value, PostKind.LIVE.value, PostKind.LIVE_COUNTED.value)

# A closed post still waiting for its public reveal: the predicate of the partial index
# ix_posts_unrevealed, with inline literals so both planners can match it to the index.
_UNREVEALED = and_(
    PostRow.state == literal_column("'closed'"),
    PostRow.revealed_at.is_(None),
    PostRow.kind != literal_column("'practice'"),
    PostRow.message_id.is_not(None),
)


def _reveal_lease_start() -> ColumnElement[datetime]:
    """When the current reveal attempt began: the last reveal lease, else the close."""
    return func.coalesce(PostRow.reveal_leased_at, PostRow.closed_at, type_=UtcDateTime())


def post_select() -> Select[PostRow, ChannelRow, MemberRow]:
    return (
        select(PostRow, ChannelRow, _Practice)
        .join(ChannelRow, ChannelRow.id == PostRow.channel_id)
        .outerjoin(_Practice, _Practice.id == PostRow.practice_member_id)
    )


def to_post(row: PostRow, ch: ChannelRow, practice: MemberRow | None = None) -> Post:
    channel = channel_ref(ch)
    return from_row(
        Post,
        row,
        channel=channel,
        kind=PostKind(row.kind),
        state=PostState(row.state),
        locale=Locale(row.locale),
        message=MessageRef(channel, row.message_id) if row.message_id else None,
        practice_user=user_ref(practice) if practice is not None else None,
    )


def post_row(
    channel_id: int,
    draft: PostDraft,
    kind: PostKind,
    state: PostState = PostState.CLAIMED,
    *,
    schedule_id: int | None = None,
    slot_at: datetime | None = None,
    practice_member_id: int | None = None,
) -> PostRow:
    """A new post's row (no answers yet), in the channel of row `channel_id`."""
    return PostRow(
        channel_id=channel_id,
        question_id=draft.question_id,
        question_hash=draft.question_hash,
        correct_choice=draft.correct_choice,
        choice_count=draft.choice_count,
        kind=str(kind),
        state=str(state),
        locale=str(draft.locale),
        created_at=draft.created_at,
        closes_at=draft.closes_at,
        answer_count=0,
        schedule_id=schedule_id,
        slot_at=slot_at,
        practice_member_id=practice_member_id,
    )


class SqlPostRepository(RefRepository):
    async def create(
        self,
        draft: PostDraft,
        kind: PostKind,
        *,
        schedule_id: int | None = None,
        slot_at: datetime | None = None,
        practice_user: UserRef | None = None,
    ) -> Post | None:
        try:
            async with self._sessions.begin() as s:
                cid = await self._refs.channel_id(s, draft.channel, draft.created_at)
                pmid = None
                if practice_user is not None:
                    pmid = (await self._refs.member_ids(s, [practice_user]))[practice_user.key]
                row = post_row(
                    cid,
                    draft,
                    kind,
                    schedule_id=schedule_id,
                    slot_at=slot_at,
                    practice_member_id=pmid,
                )
                post_id = await added_id(s, row)
        except IntegrityError:
            if schedule_id is None:
                raise
            return None  # this (schedule, slot) was claimed by someone else
        post = await self.get(post_id)
        assert post is not None
        return post

    async def mark_posted(self, post_id: int, message: MessageRef) -> Post:
        async with self._sessions.begin() as s:
            await s.execute(
                update(PostRow)
                .where(PostRow.id == post_id)
                .values(
                    message_id=message.message,
                    state=PostState.OPEN.value,
                )
                .where(PostRow.state == PostState.CLAIMED.value)
            )
        post = await self.get(post_id)
        assert post is not None
        return post

    async def get(self, post_id: int) -> Post | None:
        async with self._sessions() as s:
            found = (await s.execute(post_select().where(PostRow.id == post_id))).first()
        return to_post(*found) if found else None

    async def open_in_channel(self, channel: ChannelRef) -> list[Post]:
        return await self._list(
            and_(
                PostRow.state == PostState.OPEN.value,
                PostRow.kind != PostKind.PRACTICE.value,
                *self._channel_filter(channel),
            ),
            PostRow.id.asc(),
        )

    async def unsent_in_channel(self, channel: ChannelRef) -> list[Post]:
        """Channel posts claimed but not yet on the platform (a send failed or is under way)."""
        return await self._list(
            and_(
                PostRow.state == PostState.CLAIMED.value,
                PostRow.kind != PostKind.PRACTICE.value,
                *self._channel_filter(channel),
            ),
            PostRow.id.asc(),
        )

    async def discard_unsent(self, post_id: int) -> bool:
        """Delete a claimed post that can never be sent (the bot may not post there)."""
        async with self._sessions.begin() as s:
            gone = await s.execute(
                delete(PostRow).where(
                    PostRow.id == post_id, PostRow.state == PostState.CLAIMED.value
                )
            )
        return bool(gone.rowcount)  # type: ignore[attr-defined]

    async def history(self, channel: ChannelRef, limit: int = 1000) -> list[Post]:
        return await self._list(
            and_(PostRow.kind != PostKind.PRACTICE.value, *self._channel_filter(channel)),
            PostRow.id.desc(),
            limit,
        )

    async def close(self, post_id: int, closed_at: datetime) -> Post | None:
        """Close an open post (one caller wins) and fold its scores. The winner also takes
        the post's reveal lease in the same statement, so no reconciler reveals it while
        the winner does; a post with no public reveal (practice, or never sent) is marked
        revealed at once."""
        async with self._sessions.begin() as s:
            changed = (
                await s.execute(
                    update(PostRow)
                    .where(PostRow.id == post_id, PostRow.state == PostState.OPEN.value)
                    .values(
                        state=PostState.CLOSED.value,
                        closed_at=closed_at,
                        reveal_leased_at=closed_at,
                        reveal_attempts=PostRow.reveal_attempts + 1,
                    )
                    .returning(PostRow.id, PostRow.kind, PostRow.message_id)
                )
            ).first()
            if changed is not None:
                _, kind, message_id = changed
                # No public reveal: practice, a post never sent, a live question (its
                # round posts the results: `bot.live`).
                if kind in _NO_REVEAL or message_id is None:
                    await s.execute(
                        update(PostRow)
                        .where(PostRow.id == post_id)
                        .values(revealed_at=closed_at, reveal_leased_at=None)
                    )
                row, ch = (
                    await s.execute(
                        select(PostRow, ChannelRow)
                        .join(ChannelRow, ChannelRow.id == PostRow.channel_id)
                        .where(PostRow.id == post_id)
                    )
                ).one()
                await fold_post(s, row, ch, self._dialect)
        if changed is None:
            return None
        return await self.get(post_id)

    async def due(self, now: datetime, limit: int = 100) -> list[Post]:
        return await self._list(
            and_(
                PostRow.state == PostState.OPEN.value,
                PostRow.closes_at <= now,
                PostRow.kind.not_in((PostKind.LIVE.value, PostKind.LIVE_COUNTED.value)),
            ),
            PostRow.closes_at.asc(),
            limit,
        )

    async def unsent(self, older_than: datetime, limit: int = 100) -> list[Post]:
        return await self._list(
            and_(PostRow.state == PostState.CLAIMED.value, PostRow.created_at <= older_than),
            PostRow.id.asc(),
            limit,
        )

    # -- the reveal ----------------------------------------------------------------------

    async def claim_reveal(self, post_id: int, now: datetime, lease: timedelta) -> bool:
        """Take the reveal lease of a closed, unrevealed post whose last attempt (or close)
        is at least ``lease`` old. Of any number of callers, one per lease period wins."""
        async with self._sessions.begin() as s:
            taken = (
                await s.execute(
                    update(PostRow)
                    .where(
                        PostRow.id == post_id,
                        _UNREVEALED,
                        _reveal_lease_start() <= now - lease,
                    )
                    .values(reveal_leased_at=now, reveal_attempts=PostRow.reveal_attempts + 1)
                    .returning(PostRow.id)
                )
            ).first()
        return taken is not None

    async def mark_revealed(self, post_id: int, at: datetime) -> bool:
        """Record that the reveal was posted; False when it already was."""
        async with self._sessions.begin() as s:
            changed = (
                await s.execute(
                    update(PostRow)
                    .where(
                        PostRow.id == post_id,
                        PostRow.state == PostState.CLOSED.value,
                        PostRow.revealed_at.is_(None),
                    )
                    .values(revealed_at=at, reveal_leased_at=None)
                    .returning(PostRow.id)
                )
            ).first()
        return changed is not None

    async def unrevealed(
        self,
        older_than: datetime,
        limit: int = 100,
        platforms: Collection[str] | None = None,
    ) -> list[Post]:
        """Closed posts whose reveal was never posted and whose reveal lease (or close) is
        no newer than ``older_than``, oldest close first; optionally only on ``platforms``."""
        where = [_UNREVEALED, _reveal_lease_start() <= older_than]
        if platforms is not None:
            where.append(ChannelRow.platform.in_([str(p) for p in platforms]))
        return await self._list(and_(*where), PostRow.closed_at.asc(), limit)

    async def oldest_unrevealed(self, platforms: Collection[str] | None = None) -> datetime | None:
        """The start of the oldest pending reveal attempt (its lease, else its close)."""
        stmt = select(func.min(_reveal_lease_start())).where(_UNREVEALED)
        if platforms is not None:
            stmt = stmt.join(ChannelRow, ChannelRow.id == PostRow.channel_id).where(
                ChannelRow.platform.in_([str(p) for p in platforms])
            )
        async with self._sessions() as s:
            return (await s.execute(stmt)).scalar_one_or_none()

    @staticmethod
    def _channel_filter(channel: ChannelRef) -> list[Any]:
        return [
            *is_channel(channel),
        ]

    async def _list(self, where: Any, order: Any, limit: int | None = None) -> list[Post]:
        stmt = post_select().where(where).order_by(order)
        if limit is not None:
            stmt = stmt.limit(limit)
        async with self._sessions() as s:
            return [to_post(*r) for r in (await s.execute(stmt)).all()]
