"""erasure fences

Adds `erasures`: one row per member erased in the last hour (platform, workspace, user id,
erased_at), written by every forget-me, so the answer writer refuses that member's
clicks received before it on every replica (`storage/erasures.py`).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-10 10:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "erasures",
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("workspace", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("erased_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("platform", "workspace", "user_id", name=op.f("pk_erasures")),
    )


def downgrade() -> None:
    op.drop_table("erasures")
