"""Folding a closed post into the season aggregates, in the close's transaction (called
by `storage.score_fold.fold_post` after the boards' own steps).

A post counts for every active season covering its channel (the channel's own season, or
its workspace's) when it was created at or after the season's start and closed before
its end. Per season, per member: points (the points the answer scored on the channel's
boards), answers, correct answers, the season's own streak (scheduled questions of one
channel, as `bot.scoring` counts them, from 0 at the season's start), and the answers of
the season's first and last thirds; per topic: answers, correct answers, points. Board 0
is the whole season; a workspace season also keeps a board per channel. Ranks come from
`score_histograms` (boards ``season:<id>:<board>``), as every other board's.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.domain import PostKind
from bot.scoring import score_answer
from storage._sql import insert, summed
from storage.board_keys import ALL_TIME, season_board
from storage.models import (
    ChannelRow,
    PostRow,
    ScoreHistogramRow,
    SeasonRow,
    SeasonScoreRow,
    SeasonTopicRow,
)

ACTIVE = "active"
ENDED = "ended"
CHANNEL = "channel"
ACCURACY_SCALE = 1_000_000  # `season_scores.accuracy`: correct / answered in millionths
WORKSPACE = "workspace"


@dataclass(frozen=True, slots=True)
class SeasonAnswer:
    """One answer of a closed post, with the points it scored on the channel's boards."""

    member_id: int
    at: datetime
    correct: bool
    points: int


async def fold_seasons(
    s: AsyncSession,
    post: PostRow,
    channel: ChannelRow,
    answers: list[SeasonAnswer],
    topic: str,
    dialect: str,
) -> list[int]:
    """Fold the post into the seasons covering it; their ids."""
    kind = PostKind(post.kind)
    if kind is PostKind.PRACTICE or post.closed_at is None:
        return []
    seasons = (
        (
            await s.execute(
                select(SeasonRow)
                .where(
                    SeasonRow.platform == channel.platform,
                    SeasonRow.workspace == channel.workspace,
                    SeasonRow.state == ACTIVE,
                    SeasonRow.starts_at <= post.created_at,
                    SeasonRow.ends_at > post.closed_at,
                    or_(
                        SeasonRow.scope == WORKSPACE,
                        and_(SeasonRow.scope == CHANNEL, SeasonRow.channel_id == channel.id),
                    ),
                )
                .order_by(SeasonRow.id)
            )
        )
        .scalars()
        .all()
    )
    hist: dict[tuple[str, int], int] = defaultdict(int)
    for season in seasons:
        await _fold_season(s, season, channel, kind, answers, topic, dialect, hist)
    await fold_histograms(s, {(b, ALL_TIME, p): n for (b, p), n in hist.items()}, dialect)
    return [season.id for season in seasons]


async def fold_histograms(
    s: AsyncSession, hist: dict[tuple[str, date, int], int], dialect: str
) -> None:
    """Players per (board, period, points): what ranks a member without a scan."""
    changes = [
        {"board": b, "starts": st, "points": p, "players": n}
        for (b, st, p), n in sorted(hist.items())
        if n
    ]
    if not changes:
        return
    ins = insert(dialect, ScoreHistogramRow)
    await s.execute(
        ins.on_conflict_do_update(
            index_elements=["board", "starts", "points"],
            set_=summed(ScoreHistogramRow, ins, "players"),
        ),
        changes,
    )


async def _fold_season(
    s: AsyncSession,
    season: SeasonRow,
    channel: ChannelRow,
    kind: PostKind,
    answers: list[SeasonAnswer],
    topic: str,
    dialect: str,
    hist: dict[tuple[str, int], int],
) -> None:
    # The season's streaks live on the channel's row (board 0 of a channel season).
    streak_board = 0 if season.scope == CHANNEL else channel.id
    boards = [0] if streak_board == 0 else [0, streak_board]
    r = SeasonScoreRow
    members = [a.member_id for a in answers]
    before = (
        dict(
            (
                await s.execute(
                    select(r.member_id, r.current_streak).where(
                        r.season_id == season.id, r.board == streak_board, r.member_id.in_(members)
                    )
                )
            ).all()
        )
        if members
        else {}
    )
    if kind is PostKind.SCHEDULED:
        await s.execute(
            update(r)
            .where(r.season_id == season.id, r.board == streak_board, r.current_streak > 0)
            .values(current_streak=0)
        )
    if not answers:
        return
    rows = []
    for a in answers:
        streak = score_answer(kind, a.correct, before.get(a.member_id, 0)).streak
        early = a.at < season.first_third_ends
        late = a.at >= season.last_third_starts
        for board in boards:
            rows.append(
                {
                    "season_id": season.id,
                    "board": board,
                    "member_id": a.member_id,
                    "points": a.points,
                    "correct": int(a.correct),
                    "answered": 1,
                    "reached_at": a.at,
                    "current_streak": streak if board == streak_board else 0,
                    "best_streak": streak,
                    "early_answered": int(early),
                    "early_correct": int(early and a.correct),
                    "late_answered": int(late),
                    "late_correct": int(late and a.correct),
                    "accuracy": ACCURACY_SCALE * int(a.correct),
                }
            )
    rows.sort(key=lambda row: (row["board"], row["member_id"]))
    from storage.score_fold import _added  # the boards' rule for `reached_at` (a cycle)

    ins = insert(dialect, r)
    greatest = func.max if dialect == "sqlite" else func.greatest
    done = await s.execute(
        ins.on_conflict_do_update(
            index_elements=["season_id", "board", "member_id"],
            set_={
                **_added(r, ins),
                "current_streak": ins.excluded.current_streak,
                "best_streak": greatest(r.best_streak, ins.excluded.best_streak),
                **summed(
                    r, ins, "early_answered", "early_correct", "late_answered", "late_correct"
                ),
                # Integer division on both databases (non-negative integers).
                "accuracy": (r.correct + ins.excluded.correct)
                * ACCURACY_SCALE
                // (r.answered + ins.excluded.answered),
            },
        ).returning(r.board, r.member_id, r.points, r.answered),
        rows,
    )
    gained = {a.member_id: a.points for a in answers}
    for board, mid, points, answered in done:
        key = season_board(season.id, board)
        if answered == 1:
            hist[(key, points)] += 1
        elif gained[mid]:
            hist[(key, points)] += 1
            hist[(key, points - gained[mid])] -= 1
    t = SeasonTopicRow
    tins = insert(dialect, t)
    await s.execute(
        tins.on_conflict_do_update(
            index_elements=["season_id", "member_id", "topic"],
            set_=summed(t, tins, "answered", "correct", "points"),
        ),
        [
            {
                "season_id": season.id,
                "member_id": a.member_id,
                "topic": topic[:80],
                "answered": 1,
                "correct": int(a.correct),
                "points": a.points,
            }
            for a in sorted(answers, key=lambda a: a.member_id)
        ],
    )
