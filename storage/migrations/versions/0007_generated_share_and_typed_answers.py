"""generated questions and typed answers

Adds `channels.generated_share` (the percentage of a channel's picks that are generated
questions, `/quiz generated`; 25 by default) and `answers.value` (a typed "predict the
number" answer; NULL for a button's answer).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 15:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("channels", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("generated_share", sa.SmallInteger(), server_default="25", nullable=False)
        )
    with op.batch_alter_table("answers", schema=None) as batch_op:
        batch_op.add_column(sa.Column("value", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("answers", schema=None) as batch_op:
        batch_op.drop_column("value")
    with op.batch_alter_table("channels", schema=None) as batch_op:
        batch_op.drop_column("generated_share")
