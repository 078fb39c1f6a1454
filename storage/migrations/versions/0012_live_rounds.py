"""live rounds: rounds, their questions, players who joined, the live board

Adds `live_rounds` (a round's settings and where it is: `step`, `next_at`, the step's
lease `leased_at`; `active_channel_id` unique while it runs: one live round per channel),
`live_questions` (question k of a round and its post, claimed together), `live_players`
(who pressed Join) and `live_scores` (the live board, folded when a round ends).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-20 10:00:00
"""

import sqlalchemy as sa
from alembic import op

from storage.migrations.columns import counts

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _time(name: str, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _fk(table: str, column: str, target: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=op.f(f"fk_{table}_{column}_{target}")
    )


def upgrade() -> None:
    op.create_table(
        "live_rounds",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("channel_id", BIG_ID, nullable=False),
        sa.Column("active_channel_id", BIG_ID, nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("questions", sa.SmallInteger(), nullable=False),
        sa.Column("seconds", sa.SmallInteger(), nullable=False),
        sa.Column("topic", sa.String(length=80), nullable=True),
        sa.Column("counted", sa.Boolean(), nullable=False),
        sa.Column("locale", sa.String(length=8), nullable=False),
        sa.Column("started_by", sa.String(length=64), nullable=False),
        _time("created_at"),
        sa.Column("step", sa.Integer(), nullable=False),
        _time("next_at"),
        _time("leased_at", nullable=True),
        sa.Column("stop_requested", sa.Boolean(), nullable=False),
        sa.Column("lobby_message_id", sa.String(length=64), nullable=True),
        _time("ended_at", nullable=True),
        sa.Column("end_note", sa.String(length=16), nullable=False),
        _time("podium_at", nullable=True),
        _fk("live_rounds", "channel_id", "channels"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_live_rounds")),
        sa.UniqueConstraint("active_channel_id", name=op.f("uq_live_rounds_active_channel_id")),
    )
    op.create_index("ix_live_rounds_state_next_at", "live_rounds", ["state", "next_at"])
    op.create_table(
        "live_questions",
        sa.Column("round_id", BIG_ID, nullable=False),
        sa.Column("k", sa.SmallInteger(), nullable=False),
        sa.Column("post_id", BIG_ID, nullable=False),
        _time("opened_at", nullable=True),
        _time("results_at", nullable=True),
        _fk("live_questions", "round_id", "live_rounds"),
        _fk("live_questions", "post_id", "posts"),
        sa.PrimaryKeyConstraint("round_id", "k", name=op.f("pk_live_questions")),
        sa.UniqueConstraint("post_id", name=op.f("uq_live_questions_post_id")),
    )
    op.create_table(
        "live_players",
        sa.Column("round_id", BIG_ID, nullable=False),
        sa.Column("member_id", BIG_ID, nullable=False),
        _time("joined_at"),
        _fk("live_players", "round_id", "live_rounds"),
        _fk("live_players", "member_id", "members"),
        sa.PrimaryKeyConstraint("round_id", "member_id", name=op.f("pk_live_players")),
    )
    op.create_table(
        "live_scores",
        sa.Column("channel_id", BIG_ID, nullable=False),
        sa.Column("member_id", BIG_ID, nullable=False),
        *counts("points", "correct", "answered", "rounds"),
        _time("reached_at"),
        _fk("live_scores", "channel_id", "channels"),
        _fk("live_scores", "member_id", "members"),
        sa.PrimaryKeyConstraint("channel_id", "member_id", name=op.f("pk_live_scores")),
    )


def downgrade() -> None:
    op.drop_table("live_scores")
    op.drop_table("live_players")
    op.drop_table("live_questions")
    op.drop_index("ix_live_rounds_state_next_at", table_name="live_rounds")
    op.drop_table("live_rounds")
