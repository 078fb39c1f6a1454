"""board periods and topic stats

Adds `score_periods` (a channel's week and month, a workspace's day, week, month and
all-time totals, kept in step when a post closes), `score_histograms` (players per number
of points of every board: counts and ranks without a scan) and `score_topics` (answers
per topic),
replaces the score indexes by ones in board order, indexes practice posts by member, and
fills the new tables from what was recorded before.

Revision ID: 0003
Revises: 0001
Create Date: 2026-11-30 10:00:00
"""

import json
from datetime import date, timedelta

import sqlalchemy as sa
from alembic import op

from storage.migrations.columns import counts, fk, lightweight, ref, time

revision = "0003"
down_revision = "0001"
branch_labels = None
depends_on = None

ALL_TIME = date(1970, 1, 1)
RANK = [sa.text("points DESC"), sa.text("correct DESC"), "reached_at", "member_id"]


def upgrade() -> None:
    op.create_table(
        "score_periods",
        sa.Column("board", sa.String(length=120), nullable=False),
        sa.Column("starts", sa.Date(), nullable=False),
        ref("member_id", nullable=False),
        *counts("points", "correct", "answered"),
        time("reached_at"),
        fk("score_periods", "member_id", "members"),
        sa.PrimaryKeyConstraint("board", "starts", "member_id", name=op.f("pk_score_periods")),
    )
    op.create_index("ix_score_periods_rank", "score_periods", ["board", "starts", *RANK])
    op.create_table(
        "score_histograms",
        sa.Column("board", sa.String(length=120), nullable=False),
        sa.Column("starts", sa.Date(), nullable=False),
        *counts("points", "players"),
        sa.PrimaryKeyConstraint("board", "starts", "points", name=op.f("pk_score_histograms")),
    )
    op.create_table(
        "score_topics",
        ref("channel_id", nullable=False),
        ref("member_id", nullable=False),
        sa.Column("topic", sa.String(length=80), nullable=False),
        *counts("answered", "correct"),
        fk("score_topics", "channel_id", "channels"),
        fk("score_topics", "member_id", "members"),
        sa.PrimaryKeyConstraint("channel_id", "member_id", "topic", name=op.f("pk_score_topics")),
    )
    op.drop_index("ix_scores_channel_rank", table_name="scores")
    op.create_index("ix_scores_rank", "scores", ["channel_id", *RANK])
    op.drop_index("ix_score_days_channel_day", table_name="score_days")
    op.create_index("ix_score_days_rank", "score_days", ["channel_id", "day", *RANK])
    op.create_index("ix_posts_practice_member_id", "posts", ["practice_member_id"])
    _backfill_periods()
    _backfill_histograms()
    _backfill_topics()


def downgrade() -> None:
    op.drop_index("ix_posts_practice_member_id", table_name="posts")
    op.drop_index("ix_score_days_rank", table_name="score_days")
    op.create_index("ix_score_days_channel_day", "score_days", ["channel_id", "day"])
    op.drop_index("ix_scores_rank", table_name="scores")
    op.create_index("ix_scores_channel_rank", "scores", ["channel_id", "points"])
    op.drop_table("score_topics")
    op.drop_table("score_histograms")
    op.drop_index("ix_score_periods_rank", table_name="score_periods")
    op.drop_table("score_periods")


# The backfill is frozen here (not imported from storage.scores): a migration must keep
# doing what it did when it was written.

channels_t = lightweight("channels", id=sa.Integer, platform=sa.String, workspace=sa.String)
score_days_t = lightweight(
    "score_days", channel_id=sa.Integer, member_id=sa.Integer, day=sa.Date, points=sa.Integer,
    correct=sa.Integer, answered=sa.Integer, reached_at=sa.DateTime(timezone=True),
)
periods_t = lightweight(
    "score_periods", board=sa.String, starts=sa.Date, member_id=sa.Integer, points=sa.Integer,
    correct=sa.Integer, answered=sa.Integer, reached_at=sa.DateTime(timezone=True),
)
scores_t = lightweight("scores", channel_id=sa.Integer, points=sa.Integer)
histograms_t = lightweight(
    "score_histograms", board=sa.String, starts=sa.Date, points=sa.Integer, players=sa.Integer,
)
topics_t = lightweight(
    "score_topics", channel_id=sa.Integer, member_id=sa.Integer, topic=sa.String,
    answered=sa.Integer, correct=sa.Integer,
)
posts_t = lightweight(
    "posts", id=sa.Integer, channel_id=sa.Integer, question_hash=sa.String, kind=sa.String,
    state=sa.String,
)
answers_t = lightweight("answers", post_id=sa.Integer, member_id=sa.Integer, correct=sa.Boolean)
versions_t = lightweight("question_versions", hash=sa.String, data=sa.Text)


def _merge(total: list, points: int, correct: int, answered: int, reached) -> None:
    """Add one day's row to a period total; `reached_at` follows the fold's rule (the last
    scoring answer, or the first answer while the total is 0)."""
    p0, r0 = total[0], total[3]
    if points > 0:
        total[3] = reached if p0 <= 0 or reached > r0 else r0
    elif p0 <= 0 and reached < r0:
        total[3] = reached
    total[0] += points
    total[1] += correct
    total[2] += answered


def _insert(table: sa.TableClause, rows: list[dict]) -> None:
    for i in range(0, len(rows), 1000):
        op.get_bind().execute(table.insert(), rows[i : i + 1000])


def _backfill_periods() -> None:
    bind = op.get_bind()
    where = {cid: (p, w) for cid, p, w in bind.execute(sa.select(channels_t))}
    totals: dict[tuple[str, date, int], list] = {}
    for cid, mid, day, points, correct, answered, reached in bind.execute(sa.select(score_days_t)):
        platform, workspace = where[cid]
        week = day - timedelta(days=day.weekday())
        month = day.replace(day=1)
        ws = f"workspace:{platform}:{workspace}"
        for board, starts in (
            (f"channel:{cid}:week", week),
            (f"channel:{cid}:month", month),
            (f"{ws}:day", day),
            (f"{ws}:week", week),
            (f"{ws}:month", month),
            (f"{ws}:all", ALL_TIME),
        ):
            key = (board, starts, mid)
            if key not in totals:
                totals[key] = [points, correct, answered, reached]
            else:
                _merge(totals[key], points, correct, answered, reached)
    _insert(
        periods_t,
        [
            {
                "board": b,
                "starts": s,
                "member_id": m,
                "points": t[0],
                "correct": t[1],
                "answered": t[2],
                "reached_at": t[3],
            }
            for (b, s, m), t in sorted(totals.items())
        ],
    )


def _backfill_histograms() -> None:
    """Players per number of points, for every board."""
    bind = op.get_bind()
    counts: dict[tuple[str, date, int], int] = {}

    def add(board: str, starts: date, points: int) -> None:
        counts[(board, starts, points)] = counts.get((board, starts, points), 0) + 1

    for cid, points in bind.execute(sa.select(scores_t)):
        add(f"channel:{cid}:all", ALL_TIME, points)
    for cid, day, points in bind.execute(
        sa.select(score_days_t.c.channel_id, score_days_t.c.day, score_days_t.c.points)
    ):
        add(f"channel:{cid}:day", day, points)
    for board, starts, points in bind.execute(
        sa.select(periods_t.c.board, periods_t.c.starts, periods_t.c.points)
    ):
        add(board, starts, points)
    _insert(
        histograms_t,
        [
            {"board": b, "starts": s, "points": p, "players": n}
            for (b, s, p), n in sorted(counts.items())
        ],
    )


def _backfill_topics() -> None:
    bind = op.get_bind()
    topics = {h: json.loads(d).get("topic", "") for h, d in bind.execute(sa.select(versions_t))}
    counts: dict[tuple[int, int, str], list[int]] = {}
    rows = bind.execute(
        sa.select(
            posts_t.c.channel_id, answers_t.c.member_id, posts_t.c.question_hash, answers_t.c.correct
        )
        .select_from(answers_t.join(posts_t, posts_t.c.id == answers_t.c.post_id))
        .where(posts_t.c.state == "closed", posts_t.c.kind != "practice")
    )
    for cid, mid, qhash, correct in rows:
        c = counts.setdefault((cid, mid, topics.get(qhash, "")), [0, 0])
        c[0] += 1
        c[1] += int(bool(correct))
    _insert(
        topics_t,
        [
            {"channel_id": cid, "member_id": mid, "topic": topic, "answered": a, "correct": c}
            for (cid, mid, topic), (a, c) in sorted(counts.items())
        ],
    )
