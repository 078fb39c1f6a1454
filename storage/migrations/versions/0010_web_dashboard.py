"""web dashboard: sessions, sign-ins, rates, clinic uploads; question and day totals

Adds what the dashboard keeps: `web_sessions` (a signed-in browser: its token's hash,
the member, their workspaces, the CSRF token), `web_sign_ins` (an OAuth state's hash and
its PKCE verifier, taken once), `web_rates` (sign-in attempts per client and window),
`web_clinic` (a snapshot sent from the dashboard: progress, then the result). And two
aggregates folded at close, filled here from the answers already recorded:
`score_questions` (per channel and question: closed posts, answers, correct answers) and
`score_day_totals` (per channel and local day: answers, correct answers); an index of
`scores` by current streak.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-14 10:00:00
"""

import json

import sqlalchemy as sa
from alembic import op

from storage.migrations.columns import counts

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _time(name: str) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=False)


def _channel_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["channel_id"], ["channels.id"], name=op.f(f"fk_{table}_channel_id_channels")
    )


def upgrade() -> None:
    op.create_table(
        "score_questions",
        sa.Column("channel_id", BIG_ID, nullable=False),
        sa.Column("question_id", sa.String(length=80), nullable=False),
        sa.Column("topic", sa.String(length=80), nullable=False),
        *counts("asked", "answered", "correct"),
        _channel_fk("score_questions"),
        sa.PrimaryKeyConstraint("channel_id", "question_id", name=op.f("pk_score_questions")),
    )
    op.create_table(
        "score_day_totals",
        sa.Column("channel_id", BIG_ID, nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        *counts("answered", "correct"),
        _channel_fk("score_day_totals"),
        sa.PrimaryKeyConstraint("channel_id", "day", name=op.f("pk_score_day_totals")),
    )
    op.create_index(
        "ix_scores_streak", "scores", ["channel_id", sa.text("current_streak DESC")]
    )
    op.create_table(
        "web_sessions",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("display_name", sa.String(length=128), nullable=False),
        sa.Column("workspaces", sa.Text(), nullable=False),
        sa.Column("csrf", sa.String(length=64), nullable=False),
        sa.Column("locale", sa.String(length=8), nullable=True),
        _time("created_at"),
        _time("expires_at"),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_web_sessions")),
    )
    op.create_index(
        "ix_web_sessions_platform_user_id", "web_sessions", ["platform", "user_id"]
    )
    op.create_index(op.f("ix_web_sessions_expires_at"), "web_sessions", ["expires_at"])
    op.create_table(
        "web_sign_ins",
        sa.Column("state_hash", sa.String(length=64), nullable=False),
        sa.Column("provider", sa.String(length=16), nullable=False),
        sa.Column("verifier", sa.String(length=128), nullable=False),
        _time("created_at"),
        _time("expires_at"),
        sa.PrimaryKeyConstraint("state_hash", name=op.f("pk_web_sign_ins")),
    )
    op.create_index(op.f("ix_web_sign_ins_expires_at"), "web_sign_ins", ["expires_at"])
    op.create_table(
        "web_rates",
        sa.Column("key", sa.String(length=160), nullable=False),
        _time("window_start"),
        sa.Column("hits", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key", "window_start", name=op.f("pk_web_rates")),
    )
    op.create_table(
        "web_clinic",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("workspace", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("done", sa.Boolean(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("png", sa.LargeBinary(), nullable=True),
        _time("created_at"),
        _time("updated_at"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_web_clinic")),
    )
    op.create_index("ix_web_clinic_member", "web_clinic", ["platform", "workspace", "user_id"])
    _backfill()


def downgrade() -> None:
    op.drop_table("web_clinic")
    op.drop_table("web_rates")
    op.drop_table("web_sign_ins")
    op.drop_table("web_sessions")
    op.drop_index("ix_scores_streak", table_name="scores")
    op.drop_table("score_day_totals")
    op.drop_table("score_questions")


def _backfill() -> None:
    """The two aggregates from what was folded so far: closed, non-practice posts."""
    bind = op.get_bind()
    folded = "p.kind <> 'practice' AND p.state = 'closed'"
    topics = {
        h: str(json.loads(d).get("topic", ""))
        for h, d in bind.execute(sa.text("SELECT hash, data FROM question_versions"))
    }
    latest: dict[tuple[int, str], str] = {}
    asked: dict[tuple[int, str], int] = {}
    for cid, qid, qhash, n in bind.execute(
        sa.text(
            f"SELECT p.channel_id, p.question_id, max(p.question_hash), count(*) FROM posts p "
            f"WHERE {folded} GROUP BY p.channel_id, p.question_id"
        )
    ):
        latest[(cid, qid)] = topics.get(qhash, "")[:80]
        asked[(cid, qid)] = n
    counts: dict[tuple[int, str], tuple[int, int]] = {}
    for cid, qid, answered, correct in bind.execute(
        sa.text(
            "SELECT p.channel_id, p.question_id, count(*), "
            "sum(CASE WHEN a.correct THEN 1 ELSE 0 END) FROM answers a "
            f"JOIN posts p ON p.id = a.post_id WHERE {folded} "
            "GROUP BY p.channel_id, p.question_id"
        )
    ):
        counts[(cid, qid)] = (answered, correct or 0)
    questions = sa.table(
        "score_questions",
        *(sa.column(c) for c in ("channel_id", "question_id", "topic", "asked")),
        *(sa.column(c) for c in ("answered", "correct")),
    )
    rows = [
        {
            "channel_id": cid,
            "question_id": qid,
            "topic": latest[(cid, qid)],
            "asked": n,
            "answered": counts.get((cid, qid), (0, 0))[0],
            "correct": counts.get((cid, qid), (0, 0))[1],
        }
        for (cid, qid), n in sorted(asked.items())
    ]
    if rows:
        op.bulk_insert(questions, rows)
    op.execute(
        "INSERT INTO score_day_totals (channel_id, day, answered, correct) "
        "SELECT channel_id, day, sum(answered), sum(correct) FROM score_days "
        "GROUP BY channel_id, day"
    )
