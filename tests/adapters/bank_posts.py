"""Every message the core shows for a bank question, for the renderers' limit tests: its
posts open for a day, with more answers than any channel gets (the longest figures a
message shows)."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.domain import (
    AnswerOutcome,
    AnswerStatus,
    ChannelRef,
    Leaderboard,
    LeaderboardRow,
    Locale,
    Post,
    PostKind,
    PostState,
    Question,
    Reveal,
    UserRef,
)
from bot.messages import Message
from bot.render import leaderboard_message, outcome_message, question_message, reveal_message


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


def core_messages(
    q: Question,
    locale: Locale,
    *,
    channel: ChannelRef,
    user: UserRef,
    post_id: int,
    at: datetime,
) -> dict[str, Message]:
    """Every message the core builds for `q` in `locale`, by name: the question open, closed
    and as practice (in three time zones), each answer's outcome in every status, the reveal
    with and without answers, and a full leaderboard; `user` leads it (a long or awkward name)
    and `post_id` is the longest the platform's ids allow."""

    def post(state: PostState, kind: PostKind = PostKind.ASK) -> Post:
        return bank_post(q, locale, state, kind, post_id=post_id, channel=channel, at=at)

    open_post = post(PostState.OPEN)
    out = {
        "question": question_message(open_post, q, "Europe/Athens"),
        "closed": question_message(post(PostState.CLOSED), q, "America/St_Johns"),
        "practice": question_message(post(PostState.OPEN, PostKind.PRACTICE), q, "UTC"),
        "practice-closed": question_message(post(PostState.CLOSED, PostKind.PRACTICE), q, "UTC"),
    }
    for status in AnswerStatus:
        for choice in range(q.choice_count):
            correct = None if status is AnswerStatus.ALREADY_ANSWERED else choice == q.answer
            outcome = AnswerOutcome(status, open_post, q, choice, correct, 7)
            out[f"{status.value}-{choice}"] = outcome_message(outcome, locale)
    distribution = tuple(1000 * (i + 1) for i in range(q.choice_count))
    leader = LeaderboardRow(1, user, 99_999, 9_999, 10_000)
    out["reveal"] = reveal_message(Reveal(open_post, q, distribution, user, leader), locale)
    out["reveal-empty"] = reveal_message(Reveal(open_post, q, (0,) * q.choice_count, None), locale)
    rows = tuple(LeaderboardRow(i + 1, user, 1000 - i, 10, 12) for i in range(10))
    out["leaderboard"] = leaderboard_message(Leaderboard(rows, 5000), locale)
    return out
