"""reveal tracking: a closed post's reveal is retried under a lease until it is posted

Adds to `posts`: `revealed_at` (when the reveal reached the platform), `reveal_leased_at`
and `reveal_attempts` (the reconciler's reveal lease, as `send_leased_at` for sends), and a
partial index over the closed posts still waiting for their reveal. Posts closed before
this migration count as revealed at their close time: they were revealed by the old code
path (or lost), and history is not posted again.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 10:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

UNREVEALED = (
    "state = 'closed' AND revealed_at IS NULL AND kind <> 'practice' AND message_id IS NOT NULL"
)


def upgrade() -> None:
    with op.batch_alter_table("posts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("revealed_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(
            sa.Column("reveal_leased_at", sa.DateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(
            sa.Column("reveal_attempts", sa.Integer(), server_default="0", nullable=False)
        )
    op.execute(
        "UPDATE posts SET revealed_at = coalesce(closed_at, created_at) WHERE state = 'closed'"
    )
    op.create_index(
        "ix_posts_unrevealed",
        "posts",
        ["state", "closed_at"],
        unique=False,
        postgresql_where=sa.text(UNREVEALED),
        sqlite_where=sa.text(UNREVEALED),
    )


def downgrade() -> None:
    op.drop_index("ix_posts_unrevealed", table_name="posts")
    with op.batch_alter_table("posts", schema=None) as batch_op:
        batch_op.drop_column("reveal_attempts")
        batch_op.drop_column("reveal_leased_at")
        batch_op.drop_column("revealed_at")
