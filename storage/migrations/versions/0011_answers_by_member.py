"""answers by member, newest first: an index on (member_id, id)

The dashboard's answer history reads a member's answers newest first, 20 a page. With
an index on `member_id` alone PostgreSQL walked the primary key backwards and filtered,
reading most of the table for a member whose last answers are old; `(member_id, id)`
makes it an index range on both databases. It replaces the index on `member_id`, whose
every use it serves.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 01:40:00
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_answers_member_id_id", "answers", ["member_id", "id"])
    op.drop_index("ix_answers_member_id", table_name="answers")


def downgrade() -> None:
    op.create_index("ix_answers_member_id", "answers", ["member_id"])
    op.drop_index("ix_answers_member_id_id", table_name="answers")
