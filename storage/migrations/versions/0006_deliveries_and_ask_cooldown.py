"""deliveries and the ask cooldown: acknowledged requests survive a crash and a redelivery

Adds a unique index on `demo_runs (post_id, demo)` (a question's demo runs once, however
many replicas are asked; older duplicates keep their row but lose the post link), adds
`deliveries` (one row per platform request acknowledged: its key makes Slack's and
Discord's redeliveries harmless on every replica; an unfinished row is replayed after a
crash) and `channels.last_ask_at` (the `/quiz ask` cooldown, taken by a conditional update
so that replicas agree).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 12:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

UNFINISHED = "done_at IS NULL"


def upgrade() -> None:
    op.execute(
        "UPDATE demo_runs SET post_id = NULL WHERE post_id IS NOT NULL AND id NOT IN "
        "(SELECT min(id) FROM demo_runs WHERE post_id IS NOT NULL GROUP BY post_id, demo)"
    )
    op.create_index(
        "uq_demo_runs_post_demo",
        "demo_runs",
        ["post_id", "demo"],
        unique=True,
        postgresql_where=sa.text("post_id IS NOT NULL"),
        sqlite_where=sa.text("post_id IS NOT NULL"),
    )
    with op.batch_alter_table("channels", schema=None) as batch_op:
        batch_op.add_column(sa.Column("last_ask_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "deliveries",
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("leased_until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="1", nullable=False),
        sa.Column("done_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("payload", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_deliveries")),
    )
    op.create_index(
        "ix_deliveries_unfinished",
        "deliveries",
        ["received_at"],
        unique=False,
        postgresql_where=sa.text(UNFINISHED),
        sqlite_where=sa.text(UNFINISHED),
    )


def downgrade() -> None:
    op.drop_index("uq_demo_runs_post_demo", table_name="demo_runs")
    op.drop_index("ix_deliveries_unfinished", table_name="deliveries")
    op.drop_table("deliveries")
    with op.batch_alter_table("channels", schema=None) as batch_op:
        batch_op.drop_column("last_ask_at")
