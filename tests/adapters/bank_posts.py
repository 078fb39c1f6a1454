"""Posts of bank questions for the renderers' limit tests: open for a day, with more
answers than any channel gets (the longest figures a message shows)."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.domain import ChannelRef, Locale, Post, PostKind, PostState, Question


def bank_post(
    q: Question,
    locale: Locale,
    state: PostState,
    kind: PostKind,
    *,
    post_id: int,
    channel: ChannelRef,
    at: datetime,
) -> Post:
    return Post(
        id=post_id,
        channel=channel,
        question_id=q.id,
        question_hash=q.content_hash,
        kind=kind,
        state=state,
        locale=locale,
        created_at=at,
        closes_at=at + timedelta(hours=24),
        answer_count=12_345,
    )
