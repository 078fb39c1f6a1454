"""post send lease: the reconciler resends a claimed, never-sent post under a lease

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 10:00:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('posts', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('send_attempts', sa.Integer(), server_default='0', nullable=False)
        )
        batch_op.add_column(
            sa.Column('send_leased_at', sa.DateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table('posts', schema=None) as batch_op:
        batch_op.drop_column('send_leased_at')
        batch_op.drop_column('send_attempts')
