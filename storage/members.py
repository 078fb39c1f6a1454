"""A member's personal data: everything stored about them (`export`), and erasure
(`forget`), for `/quiz mydata`, `/quiz forget-me` and `quizbot member export|forget`.

Erasure runs in one transaction. The member's answers and practice cards are deleted,
and their rows leave every aggregate — `scores`, `score_days`, `score_periods`,
`score_topics` — with each board's histogram moved by the same amounts, so every board
equals a recomputation from the answers that remain (no other member's points depend on
theirs). Posts keep their counts in step. Submitted questions, decisions and reports stay,
without the member. The member row itself stays as an anonymous tombstone
(``forgotten-<id>``): ids cached by the answer writer still name a row, and a member who
plays again later is a new member.

Locks follow the close's order (post rows, then channel rows, ascending), so an erasure
and a close folding the same member's answers wait for each other instead of
deadlocking, and no fold can add their answers back after the erasure read them. Before
them, the member's erasure lock and, at the end, their fence (`storage.erasures`): a
click that arrived before the erasure finished is never kept, on any replica.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import date
from typing import Any, cast

from sqlalchemy import Select, Table, bindparam, case, func, select, update
from sqlalchemy import delete as sql_delete
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.bank import question_from_dict
from bot.clock import Clock, SystemClock
from bot.domain import BoardWindow, Locale, Platform, PostKind, PostState, UserRef
from bot.mydata import Forgotten
from storage._session import on_commit
from storage._sql import RefRepository
from storage.board_keys import ALL_TIME, channel_board, season_board
from storage.erasures import FENCE_RETENTION, lock_members, member_key, purge_fences, write_fence
from storage.models import (
    AnswerRow,
    ChannelRow,
    FlagRow,
    LivePlayerRow,
    LiveScoreRow,
    MemberRow,
    PostRow,
    PracticeCardRow,
    QuestionVersionRow,
    RetiredQuestionRow,
    ScoreDayRow,
    ScoreDayTotalRow,
    ScoreHistogramRow,
    ScorePeriodRow,
    ScoreQuestionRow,
    ScoreRow,
    ScoreTopicRow,
    SeasonRow,
    SeasonScoreRow,
    SeasonTopicRow,
    TeamMemberRow,
    TeamQuestionRow,
    TeamRow,
)
from storage.refs import RefResolver, is_member
from storage.team_fold import rebuild, teams_of

TOMBSTONE = "forgotten-{id}"


class SqlMemberData(RefRepository):
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        refs: RefResolver,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(sessions, refs)
        self._clock = clock or SystemClock()  # the clock that stamps clicks

    async def _member(self, s: AsyncSession, user: UserRef) -> MemberRow | None:
        return (
            await s.execute(
                select(MemberRow).where(
                    *is_member(user),
                )
            )
        ).scalar_one_or_none()

    # -- export ----------------------------------------------------------------------

    async def export(self, user: UserRef) -> dict[str, Any]:
        async with self._sessions() as s:
            member = await self._member(s, user)
            if member is None:
                return {"member": None, "note": "the quiz stores nothing about you"}
            mid = member.id
            channels = {
                c.id: f"{c.platform}:{c.workspace}:{c.channel}"
                for c in (await s.execute(select(ChannelRow))).scalars()
            }
            return {
                "member": {
                    "platform": member.platform,
                    "workspace": member.workspace,
                    "user": member.user_id,
                    "display_name": member.display_name,
                    "locale": member.locale,
                },
                "answers": await self._answers(s, mid, channels),
                "scores": await _exported(
                    s,
                    select(ScoreRow).where(ScoreRow.member_id == mid),
                    (
                        "points",
                        "correct",
                        "answered",
                        "current_streak",
                        "best_streak",
                        "reached_at",
                    ),
                    channels,
                ),
                "scores_per_day": await _exported(
                    s,
                    select(ScoreDayRow).where(ScoreDayRow.member_id == mid),
                    ("day", "points", "correct", "answered"),
                    channels,
                ),
                "topics": await _exported(
                    s,
                    select(ScoreTopicRow).where(ScoreTopicRow.member_id == mid),
                    ("topic", "answered", "correct"),
                    channels,
                ),
                "seasons": [
                    {
                        "season": name,
                        "board": "season" if r.board == 0 else channels.get(r.board, r.board),
                        "points": r.points,
                        "correct": r.correct,
                        "answered": r.answered,
                        "best_streak": r.best_streak,
                    }
                    for r, name in await s.execute(
                        select(SeasonScoreRow, SeasonRow.name)
                        .join(SeasonRow, SeasonRow.id == SeasonScoreRow.season_id)
                        .where(SeasonScoreRow.member_id == mid)
                    )
                ],
                "team": (
                    await s.execute(
                        select(TeamRow.name)
                        .join(TeamMemberRow, TeamMemberRow.team_id == TeamRow.id)
                        .where(TeamMemberRow.member_id == mid)
                    )
                ).scalar_one_or_none(),
                "practice_cards": await _exported(
                    s,
                    select(PracticeCardRow).where(PracticeCardRow.member_id == mid),
                    ("question_id", "box", "due_at", "last_answered_at"),
                ),
                "submitted_questions": [
                    {
                        "number": r.id,
                        "workspace": f"{r.platform}:{r.workspace}",
                        "question": json.loads(r.data),
                        "state": r.state,
                        "created_at": r.created_at,
                        "decided_at": r.decided_at,
                        "reason": r.reason,
                    }
                    for r in (
                        await s.execute(
                            select(TeamQuestionRow).where(TeamQuestionRow.author_member_id == mid)
                        )
                    ).scalars()
                ],
                "reports": await _exported(
                    s,
                    select(FlagRow).where(FlagRow.member_id == mid),
                    ("question_id", ("post", "post_id"), "reason", "note", "created_at"),
                ),
            }

    async def _answers(
        self, s: AsyncSession, mid: int, channels: dict[int, str]
    ) -> list[dict[str, Any]]:
        rows = (
            await s.execute(
                select(AnswerRow, PostRow, QuestionVersionRow.data)
                .join(PostRow, PostRow.id == AnswerRow.post_id)
                .join(QuestionVersionRow, QuestionVersionRow.hash == PostRow.question_hash)
                .where(AnswerRow.member_id == mid)
                .order_by(AnswerRow.answered_at)
            )
        ).all()
        out = []
        for answer, post, data in rows:
            question = question_from_dict(json.loads(data))
            text = question.text(Locale(post.locale))
            chosen = text.choices[answer.choice] if 0 <= answer.choice < len(text.choices) else None
            out.append(
                {
                    "answered_at": answer.answered_at,
                    "channel": channels[post.channel_id],
                    "post": post.id,
                    "kind": post.kind,
                    "question_id": post.question_id,
                    "question": text.prompt,
                    "choice": chosen,
                    "typed": answer.value,
                    "correct": answer.correct,
                }
            )
        return out

    # -- erasure ---------------------------------------------------------------------

    async def forget(self, user: UserRef) -> Forgotten:
        key = member_key(user)
        async with self._sessions.begin() as s:
            # First, before any post row: the answer writers' batches of this member's
            # stripe finish, later ones wait and then see the fence.
            await lock_members(s, self._dialect, [key], exclusive=True)
            member = await self._member(s, user)
            done = Forgotten()
            if member is not None:
                teams = await teams_of(s, [member.id])
                done = await _erase(s, member.id)
                # Their team's boards without them (their membership went with the rest).
                await rebuild(s, self._dialect, str(user.platform), user.workspace, teams)
                await s.execute(
                    update(MemberRow)
                    .where(MemberRow.id == member.id)
                    .values(user_id=TOMBSTONE.format(id=member.id), display_name="", locale=None)
                )
            # Also without a row: their first clicks may still be queued. Stamped last,
            # so every click that arrived while this ran is behind it.
            now = self._clock.now()
            await write_fence(s, self._dialect, key, now)
            await purge_fences(s, self._dialect, now - FENCE_RETENTION)
            on_commit(s, lambda: self._refs.drop_member(*key))
            return done

    async def forget_everywhere(self, platform: str, user_id: str) -> list[tuple[str, Forgotten]]:
        """`quizbot member forget <platform>:<user id>`: the user in every workspace."""
        async with self._sessions() as s:
            workspaces = (
                await s.execute(
                    select(MemberRow.workspace).where(
                        MemberRow.platform == platform, MemberRow.user_id == user_id
                    )
                )
            ).scalars()
            found = list(workspaces)
        return [(ws, await self.forget(UserRef(Platform(platform), ws, user_id))) for ws in found]


async def _erase(s: AsyncSession, mid: int) -> Forgotten:
    per_post = dict(
        (
            await s.execute(
                select(AnswerRow.post_id, func.count())
                .where(AnswerRow.member_id == mid)
                .group_by(AnswerRow.post_id)
            )
        ).all()
    )
    # The close's lock order: posts, then channels (see the module's docstring).
    await s.execute(
        select(PostRow.id)
        .where(PostRow.id.in_(sorted(per_post)))
        .order_by(PostRow.id)
        .with_for_update()
    )
    scored = set(
        (await s.execute(select(ScoreRow.channel_id).where(ScoreRow.member_id == mid))).scalars()
    )
    answered = set(
        (
            await s.execute(select(PostRow.channel_id).where(PostRow.id.in_(sorted(per_post))))
        ).scalars()
    )
    await s.execute(
        select(ChannelRow.id)
        .where(ChannelRow.id.in_(sorted(scored | answered)))
        .order_by(ChannelRow.id)
        .with_for_update(key_share=True)
    )
    await _leave_totals(s, mid)
    await _leave_boards(s, mid)
    if per_post:
        posts = cast(Table, PostRow.__table__)
        await s.execute(
            update(posts)
            .where(posts.c.id == bindparam("post"))
            .values(answer_count=posts.c.answer_count - bindparam("n")),
            [{"post": p, "n": n} for p, n in sorted(per_post.items())],
        )
    answers = await s.execute(sql_delete(AnswerRow).where(AnswerRow.member_id == mid))
    cards = await s.execute(sql_delete(PracticeCardRow).where(PracticeCardRow.member_id == mid))
    await s.execute(sql_delete(LivePlayerRow).where(LivePlayerRow.member_id == mid))
    await s.execute(sql_delete(LiveScoreRow).where(LiveScoreRow.member_id == mid))
    await s.execute(
        update(PostRow).where(PostRow.practice_member_id == mid).values(practice_member_id=None)
    )
    submitted = await s.execute(
        update(TeamQuestionRow)
        .where(TeamQuestionRow.author_member_id == mid)
        .values(author_member_id=None)
    )
    await s.execute(
        update(TeamQuestionRow)
        .where(TeamQuestionRow.decided_by_member_id == mid)
        .values(decided_by_member_id=None)
    )
    await s.execute(
        update(RetiredQuestionRow)
        .where(RetiredQuestionRow.retired_by_member_id == mid)
        .values(retired_by_member_id=None)
    )
    flags = await s.execute(update(FlagRow).where(FlagRow.member_id == mid).values(member_id=None))
    return Forgotten(
        members=1,
        answers=answers.rowcount,  # type: ignore[attr-defined]
        practice_cards=cards.rowcount,  # type: ignore[attr-defined]
        submissions=submitted.rowcount,  # type: ignore[attr-defined]
        flags=flags.rowcount,  # type: ignore[attr-defined]
    )


async def _leave_totals(s: AsyncSession, mid: int) -> None:
    """Take the member's folded answers out of the everyone-together totals: per
    question (their answers to closed posts) and per day (their `score_days` rows)."""
    per_question = (
        await s.execute(
            select(
                PostRow.channel_id,
                PostRow.question_id,
                func.count(),
                func.sum(case((AnswerRow.correct, 1), else_=0)),
            )
            .join(AnswerRow, AnswerRow.post_id == PostRow.id)
            .where(
                AnswerRow.member_id == mid,
                PostRow.state == PostState.CLOSED.value,
                PostRow.kind != PostKind.PRACTICE.value,
            )
            .group_by(PostRow.channel_id, PostRow.question_id)
            .order_by(PostRow.channel_id, PostRow.question_id)
        )
    ).all()
    await _subtract(
        s, ScoreQuestionRow, "question_id", [(c, q, n, k or 0) for c, q, n, k in per_question]
    )
    per_day = (
        await s.execute(
            select(
                ScoreDayRow.channel_id, ScoreDayRow.day, ScoreDayRow.answered, ScoreDayRow.correct
            )
            .where(ScoreDayRow.member_id == mid)
            .order_by(ScoreDayRow.channel_id, ScoreDayRow.day)
        )
    ).all()
    await _subtract(s, ScoreDayTotalRow, "day", [(c, day, n, k) for c, day, n, k in per_day])


async def _subtract(
    s: AsyncSession, model: Any, key: str, rows: list[tuple[int, Any, int, int]]
) -> None:
    """Take (answered, correct) off the everyone-together rows keyed by (channel, `key`)."""
    if not rows:
        return
    table = cast(Table, model.__table__)
    answered, correct = table.c.answered, table.c.correct
    await s.execute(
        update(table)
        .where(table.c.channel_id == bindparam("c"), table.c[key] == bindparam("key"))
        .values(answered=answered - bindparam("n"), correct=correct - bindparam("k")),
        [{"c": c, "key": at, "n": n, "k": k} for c, at, n, k in rows],
    )


async def _leave_boards(s: AsyncSession, mid: int) -> None:
    """Take the member off every board: each aggregate row of theirs goes, and the board's
    histogram loses one player at that row's points."""
    leaving: Counter[tuple[str, date, int]] = Counter()
    for cid, points in await s.execute(
        select(ScoreRow.channel_id, ScoreRow.points).where(ScoreRow.member_id == mid)
    ):
        leaving[(channel_board(cid, BoardWindow.ALL), ALL_TIME, points)] += 1
    for cid, day, points in await s.execute(
        select(ScoreDayRow.channel_id, ScoreDayRow.day, ScoreDayRow.points).where(
            ScoreDayRow.member_id == mid
        )
    ):
        leaving[(channel_board(cid, BoardWindow.DAY), day, points)] += 1
    for board, starts, points in await s.execute(
        select(ScorePeriodRow.board, ScorePeriodRow.starts, ScorePeriodRow.points).where(
            ScorePeriodRow.member_id == mid
        )
    ):
        leaving[(board, starts, points)] += 1
    for sid, season_part, points in await s.execute(
        select(SeasonScoreRow.season_id, SeasonScoreRow.board, SeasonScoreRow.points).where(
            SeasonScoreRow.member_id == mid
        )
    ):
        leaving[(season_board(sid, season_part), ALL_TIME, points)] += 1
    if leaving:
        h = cast(Table, ScoreHistogramRow.__table__)
        await s.execute(
            update(h)
            .where(
                h.c.board == bindparam("b"),
                h.c.starts == bindparam("s"),
                h.c.points == bindparam("p"),
            )
            .values(players=h.c.players - bindparam("n")),
            [  # sorted: one lock order with the folds
                {"b": b, "s": st, "p": p, "n": n} for (b, st, p), n in sorted(leaving.items())
            ],
        )
    # Seasons and teams too: their boards and their team (`storage.teams` reads teams'
    # points from these boards, so a team loses the member's points with them).
    for model in (
        ScoreRow,
        ScoreDayRow,
        ScorePeriodRow,
        ScoreTopicRow,
        SeasonScoreRow,
        SeasonTopicRow,
        TeamMemberRow,
    ):
        await s.execute(sql_delete(model).where(model.member_id == mid))


__all__ = ["TOMBSTONE", "SqlMemberData"]


async def _exported(
    s: AsyncSession,
    rows: Select[Any],
    fields: tuple[str | tuple[str, str], ...],
    channels: dict[int, str] | None = None,
) -> list[dict[str, Any]]:
    """The ORM rows `rows` selects, each as a dict of `fields` (a name, or a key and the
    column it holds), after the row's channel where `channels` is given."""
    out = []
    for r in (await s.execute(rows)).scalars():
        row: dict[str, Any] = {} if channels is None else {"channel": channels[r.channel_id]}
        for field in fields:
            key, column = (field, field) if isinstance(field, str) else field
            row[key] = getattr(r, column)
        out.append(row)
    return out
