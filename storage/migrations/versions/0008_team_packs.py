"""team packs, flags and retired questions

Adds `channels.builtin_pack` and `channels.team_pack` (which packs a channel's picks draw
from, `/quiz packs`), `team_packs` (a workspace's pack revision and review channel),
`team_questions` (submitted or imported questions with their review), `retired_questions`
(never picked again in a workspace) and `flags` (members' reports on questions).

The console's workspace is now `console` (it was `local`): its channels, members and
workspace boards are renamed, so a terminal player keeps their history.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-08 10:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def _time(name: str, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _id() -> sa.Column[object]:
    return sa.Column("id", BIG_ID, autoincrement=True, nullable=False)


def _ref(name: str, nullable: bool = True) -> sa.Column[object]:
    return sa.Column(name, BIG_ID, nullable=nullable)


def _fk(column: str, table: str, target: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=op.f(f"fk_{table}_{column}_{target}")
    )


def _rename_console_workspace(old: str, new: str) -> None:
    for table in ("channels", "members"):
        op.execute(
            sa.text(
                f"UPDATE {table} SET workspace = :new WHERE platform = 'console' AND workspace = :old"
            ).bindparams(new=new, old=old)
        )
    for table in ("score_periods", "score_histograms"):
        op.execute(
            sa.text(
                f"UPDATE {table} SET board = :prefix_new || substr(board, :cut) "
                "WHERE board LIKE :pattern"
            ).bindparams(
                prefix_new=f"workspace:console:{new}:",
                cut=len(f"workspace:console:{old}:") + 1,
                pattern=f"workspace:console:{old}:%",
            )
        )


def upgrade() -> None:
    _rename_console_workspace("local", "console")
    # A plain ADD COLUMN (no batch): SQLite would otherwise rebuild `channels`, which the
    # rows of every other table reference.
    for name in ("builtin_pack", "team_pack"):
        op.add_column(
            "channels",
            sa.Column(name, sa.Boolean(), server_default=sa.text("true"), nullable=False),
        )
    op.create_table(
        "team_packs",
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("workspace", sa.String(length=64), nullable=False),
        sa.Column("revision", sa.Integer(), server_default="0", nullable=False),
        _ref("review_channel_id"),
        _fk("review_channel_id", "team_packs", "channels"),
        sa.PrimaryKeyConstraint("platform", "workspace", name=op.f("pk_team_packs")),
    )
    op.create_table(
        "team_questions",
        _id(),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("workspace", sa.String(length=64), nullable=False),
        sa.Column("question_id", sa.String(length=80), nullable=False),
        sa.Column("question_hash", sa.String(length=32), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("origin", sa.String(length=16), nullable=False),
        _ref("author_member_id"),
        _ref("channel_id"),
        _time("created_at"),
        _time("decided_at", nullable=True),
        _ref("decided_by_member_id"),
        sa.Column("reason", sa.Text(), server_default="", nullable=False),
        sa.Column("review_message_id", sa.String(length=64), nullable=True),
        _ref("review_channel_id"),
        _fk("author_member_id", "team_questions", "members"),
        _fk("channel_id", "team_questions", "channels"),
        _fk("decided_by_member_id", "team_questions", "members"),
        _fk("review_channel_id", "team_questions", "channels"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_team_questions")),
        sa.UniqueConstraint(
            "platform",
            "workspace",
            "question_hash",
            name=op.f("uq_team_questions_platform"),
        ),
    )
    op.create_index(
        "ix_team_questions_platform_workspace_state",
        "team_questions",
        ["platform", "workspace", "state"],
    )
    op.create_table(
        "retired_questions",
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("workspace", sa.String(length=64), nullable=False),
        sa.Column("question_id", sa.String(length=80), nullable=False),
        _time("retired_at"),
        _ref("retired_by_member_id"),
        _fk("retired_by_member_id", "retired_questions", "members"),
        sa.PrimaryKeyConstraint(
            "platform", "workspace", "question_id", name=op.f("pk_retired_questions")
        ),
    )
    op.create_table(
        "flags",
        _id(),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("workspace", sa.String(length=64), nullable=False),
        sa.Column("question_id", sa.String(length=80), nullable=False),
        sa.Column("question_hash", sa.String(length=32), nullable=False),
        _ref("post_id", nullable=False),
        _ref("member_id"),
        sa.Column("reason", sa.String(length=16), nullable=False),
        sa.Column("note", sa.Text(), server_default="", nullable=False),
        _time("created_at"),
        _fk("post_id", "flags", "posts"),
        _fk("member_id", "flags", "members"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_flags")),
        sa.UniqueConstraint("post_id", "member_id", name=op.f("uq_flags_post_id")),
    )
    op.create_index(
        "ix_flags_platform_workspace_question_id",
        "flags",
        ["platform", "workspace", "question_id"],
    )


def downgrade() -> None:
    op.drop_index("ix_flags_platform_workspace_question_id", table_name="flags")
    op.drop_table("flags")
    op.drop_table("retired_questions")
    op.drop_index("ix_team_questions_platform_workspace_state", table_name="team_questions")
    op.drop_table("team_questions")
    op.drop_table("team_packs")
    with op.batch_alter_table("channels", schema=None) as batch_op:
        batch_op.drop_column("team_pack")
        batch_op.drop_column("builtin_pack")
    _rename_console_workspace("console", "local")
