"""Folding a closed post into the score aggregates, one step per aggregate (see
`storage.scores` for the tables and how boards read them). Called inside the close's
transaction by `storage.posts`."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import and_, case, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.domain import BoardWindow, PostKind
from bot.scoring import Scored, local_day, period_start, score_answer
from storage._sql import insert, summed
from storage.board_keys import ALL_TIME, channel_board, season_board, workspace_board
from storage.models import (
    AnswerRow,
    ChannelRow,
    PostRow,
    QuestionVersionRow,
    ScoreDayRow,
    ScoreDayTotalRow,
    ScorePeriodRow,
    ScoreQuestionRow,
    ScoreRow,
    ScoreTopicRow,
    SeasonScoreRow,
)
from storage.season_fold import SeasonAnswer, fold_histograms, fold_seasons
from storage.team_fold import refresh, teams_of

Board = type[ScoreRow] | type[ScoreDayRow] | type[ScorePeriodRow] | type[SeasonScoreRow]


# -- folding a closed post -------------------------------------------------------------


async def fold_post(s: AsyncSession, post: PostRow, channel: ChannelRow, dialect: str) -> None:
    """Add a just-closed post's answers to every aggregate (call inside the close).

    Streaks are read, then written: folds of one channel are serialized by a lock on the
    channel row (SQLite serializes every writer anyway). Rows are upserted in key order so
    concurrent folds of one workspace take row locks in the same order (no deadlock). One
    step per aggregate: all-time scores, days, periods (weeks, months, the workspace), the
    histograms that rank them, topics; then the seasons covering the post
    (`storage.season_fold`).
    """
    kind = PostKind(post.kind)
    if kind is PostKind.PRACTICE or kind is PostKind.LIVE:
        return  # a live round's points are its own (`storage.live`), unless counted
    if kind is PostKind.LIVE_COUNTED:
        kind = PostKind.ASK  # `/quiz live … count`: the daily boards, as an asked question
    await s.execute(
        select(ChannelRow.id).where(ChannelRow.id == channel.id).with_for_update(key_share=True)
    )
    answers = (
        await s.execute(
            select(AnswerRow.member_id, AnswerRow.correct, AnswerRow.answered_at)
            .where(AnswerRow.post_id == post.id)
            .order_by(AnswerRow.member_id)
        )
    ).all()
    streaks = await _streaks(s, channel, [mid for mid, _, _ in answers])
    if kind is PostKind.SCHEDULED:
        # A scheduled question breaks every streak it does not extend; the answerers'
        # streaks are written back (absolute values) just below.
        await s.execute(
            update(ScoreRow)
            .where(ScoreRow.channel_id == channel.id, ScoreRow.current_streak > 0)
            .values(current_streak=0)
        )
    topic = await _topic(s, post.question_hash)
    await _fold_question(s, channel, post.question_id, topic, answers, dialect)
    scored = [
        _Scored(mid, at, bool(correct), score_answer(kind, correct, streaks.get(mid, 0)))
        for mid, correct, at in answers
    ]
    seasons = await fold_seasons(
        s,
        post,
        channel,
        [SeasonAnswer(a.member_id, a.at, a.correct, a.score.points) for a in scored],
        topic,
        dialect,
    )
    if not answers:
        return
    hist: dict[tuple[str, date, int], int] = defaultdict(int)
    await _fold_boards(s, channel, scored, dialect, hist)
    await fold_histograms(s, hist, dialect)
    await _fold_topics(s, channel, scored, topic, dialect)
    await _fold_day_totals(s, channel, scored, dialect)
    await _fold_teams(s, channel, scored, seasons, dialect)


async def _fold_teams(
    s: AsyncSession, channel: ChannelRow, scored: list[_Scored], seasons: list[int], dialect: str
) -> None:
    """The answerers' teams, on the workspace's periods and the seasons this post added to
    (`storage.team_fold`)."""
    teams = await teams_of(s, (a.member_id for a in scored))
    if not teams:
        return
    ws = (channel.platform, channel.workspace)
    keys = {k for a in scored for k in _workspace_keys(ws, local_day(a.at, channel.timezone))}
    keys.update((season_board(sid), ALL_TIME) for sid in seasons)
    await refresh(s, dialect, teams, keys)


@dataclass(frozen=True, slots=True)
class _Scored:
    """One answer of the closed post, scored."""

    member_id: int
    at: datetime
    correct: bool
    score: Scored  # points, and the streak after this answer

    @property
    def tally(self) -> dict[str, int]:
        return {"points": self.score.points, "correct": int(self.correct), "answered": 1}


async def _streaks(s: AsyncSession, channel: ChannelRow, members: list[int]) -> dict[int, int]:
    if not members:
        return {}
    found = await s.execute(
        select(ScoreRow.member_id, ScoreRow.current_streak).where(
            ScoreRow.channel_id == channel.id, ScoreRow.member_id.in_(members)
        )
    )
    return {mid: streak for mid, streak in found}


async def _fold_boards(
    s: AsyncSession,
    channel: ChannelRow,
    scored: list[_Scored],
    dialect: str,
    hist: dict[tuple[str, date, int], int],
) -> None:
    """The channel's all-time and daily rows, then the periods' (weeks, months, the
    workspace's), each upserted in key order with its players' histogram moves."""
    everyone = channel_board(channel.id, BoardWindow.ALL)
    daily = channel_board(channel.id, BoardWindow.DAY)
    ws = (channel.platform, channel.workspace)
    all_time = [
        {
            "channel_id": channel.id,
            "member_id": a.member_id,
            **a.tally,
            "current_streak": a.score.streak,
            "best_streak": a.score.streak,
            "reached_at": a.at,
        }
        for a in scored
    ]
    days = [
        {
            "channel_id": channel.id,
            "member_id": a.member_id,
            "day": local_day(a.at, channel.timezone),
            **a.tally,
            "reached_at": a.at,
        }
        for a in scored
    ]
    periods = [
        {"board": board, "starts": starts, "member_id": a.member_id, **a.tally, "reached_at": a.at}
        for a in scored
        for board, starts in _period_keys(channel.id, ws, local_day(a.at, channel.timezone))
    ]
    periods.sort(key=lambda r: (r["board"], r["starts"], r["member_id"]))
    boards: list[tuple[Any, tuple[str, ...], list[dict[str, Any]], Callable[..., Any]]] = [
        (ScoreRow, ("channel_id", "member_id"), all_time, lambda _: (everyone, ALL_TIME)),
        (ScoreDayRow, ("channel_id", "member_id", "day"), days, lambda k: (daily, k["day"])),
        (
            ScorePeriodRow,
            ("board", "starts", "member_id"),
            periods,
            lambda k: (k["board"], k["starts"]),
        ),
    ]
    for model, keys, rows, board in boards:
        await _fold_board(s, dialect, model, keys, rows, scored, hist, board)


async def _fold_board(
    s: AsyncSession,
    dialect: str,
    model: type[ScoreRow] | type[ScoreDayRow] | type[ScorePeriodRow],
    keys: tuple[str, ...],
    rows: list[dict[str, Any]],
    scored: list[_Scored],
    hist: dict[tuple[str, date, int], int],
    board: Callable[[dict[str, Any]], tuple[str, date]],
) -> None:
    """Upsert a board's rows (`keys`: the unique index; the all-time rows keep the streaks
    too) and move each returned player in the histogram of `board(key)`."""
    ins = insert(dialect, model)
    assign = _added(model, ins)
    if model is ScoreRow:
        greatest = func.max if dialect == "sqlite" else func.greatest
        assign["current_streak"] = ins.excluded.current_streak
        assign["best_streak"] = greatest(ScoreRow.best_streak, ins.excluded.best_streak)
    done = await s.execute(
        ins.on_conflict_do_update(index_elements=list(keys), set_=assign).returning(
            *(getattr(model, k) for k in keys), model.points, model.answered
        ),
        rows,
    )
    gained = _gained(scored)
    for *values, points, answered in done:
        key = dict(zip(keys, values, strict=True))
        _moved(hist, board(key), points, gained[key["member_id"]], answered)


async def _fold_topics(
    s: AsyncSession, channel: ChannelRow, scored: list[_Scored], topic: str, dialect: str
) -> None:
    ins = insert(dialect, ScoreTopicRow)
    rows = [
        {
            "channel_id": channel.id,
            "member_id": a.member_id,
            "topic": topic,
            "answered": 1,
            "correct": int(a.correct),
        }
        for a in scored
    ]
    await s.execute(
        ins.on_conflict_do_update(
            index_elements=["channel_id", "member_id", "topic"],
            set_=summed(ScoreTopicRow, ins, "answered", "correct"),
        ),
        rows,
    )


async def _fold_question(
    s: AsyncSession,
    channel: ChannelRow,
    question_id: str,
    topic: str,
    answers: Any,
    dialect: str,
) -> None:
    """The question's calibration in the channel: one more closed post, its answers."""
    correct = sum(1 for _, right, _ in answers if right)
    ins = insert(dialect, ScoreQuestionRow)
    q = ScoreQuestionRow
    await s.execute(
        ins.values(
            channel_id=channel.id,
            question_id=question_id,
            topic=topic[:80],
            asked=1,
            answered=len(answers),
            correct=correct,
        ).on_conflict_do_update(
            index_elements=["channel_id", "question_id"],
            set_={"topic": ins.excluded.topic, **summed(q, ins, "asked", "answered", "correct")},
        )
    )


async def _fold_day_totals(
    s: AsyncSession, channel: ChannelRow, scored: list[_Scored], dialect: str
) -> None:
    """Answers per local day of the channel, everyone together (the activity chart)."""
    days: dict[date, list[int]] = defaultdict(lambda: [0, 0])
    for a in scored:
        tally = days[local_day(a.at, channel.timezone)]
        tally[0] += 1
        tally[1] += int(a.correct)
    ins = insert(dialect, ScoreDayTotalRow)
    t = ScoreDayTotalRow
    await s.execute(
        ins.on_conflict_do_update(
            index_elements=["channel_id", "day"],
            set_=summed(t, ins, "answered", "correct"),
        ),
        [
            {"channel_id": channel.id, "day": d, "answered": n, "correct": c}
            for d, (n, c) in sorted(days.items())
        ],
    )


def _gained(scored: list[_Scored]) -> dict[int, int]:
    return {a.member_id: a.score.points for a in scored}


def _moved(
    hist: dict[tuple[str, date, int], int],
    board: tuple[str, date],
    points: int,
    gained: int,
    answered: int,
) -> None:
    """A player's move in a board's histogram, from the row an upsert returned: a new row
    (its first answer) adds a player at `points`; a score that grew moves one."""
    if answered == 1:
        hist[(*board, points)] += 1
    elif gained:
        hist[(*board, points)] += 1
        hist[(*board, points - gained)] -= 1


def _period_keys(channel_id: int, ws: tuple[str, str], day: date) -> list[tuple[str, date]]:
    return [
        (channel_board(channel_id, BoardWindow.WEEK), period_start(BoardWindow.WEEK, day)),
        (channel_board(channel_id, BoardWindow.MONTH), period_start(BoardWindow.MONTH, day)),
        *_workspace_keys(ws, day),
    ]


def _workspace_keys(ws: tuple[str, str], day: date) -> list[tuple[str, date]]:
    return [
        (workspace_board(*ws, BoardWindow.DAY), day),
        (workspace_board(*ws, BoardWindow.WEEK), period_start(BoardWindow.WEEK, day)),
        (workspace_board(*ws, BoardWindow.MONTH), period_start(BoardWindow.MONTH, day)),
        (workspace_board(*ws, BoardWindow.ALL), ALL_TIME),
    ]


def _added(model: Board, ins: Any) -> dict[str, Any]:
    """Upsert assignments that add one answer's tally to a total.

    `reached_at` is when the total reached its points: the latest scoring answer, or the
    earliest answer while the total is 0. Folds may arrive out of answer order (posts
    close in any order), hence the comparisons.
    """
    new, old = ins.excluded.reached_at, model.reached_at
    return {
        **summed(model, ins, "points", "correct", "answered"),
        "reached_at": case(
            (ins.excluded.points > 0, case((and_(model.points > 0, old > new), old), else_=new)),
            (model.points > 0, old),
            (new < old, new),
            else_=old,
        ),
    }


async def _topic(s: AsyncSession, content_hash: str) -> str:
    data = (
        await s.execute(
            select(QuestionVersionRow.data).where(QuestionVersionRow.hash == content_hash)
        )
    ).scalar_one()
    return str(json.loads(data)["topic"])
