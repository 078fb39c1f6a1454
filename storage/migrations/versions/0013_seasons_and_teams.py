"""seasons and team leagues

Adds `seasons` (a named competition over a channel or a workspace, ended once, its podium
posted under a lease), the season aggregates folded at close (`season_scores` per season,
board and member; `season_topics` per season, member and topic; their ranks counted in
`score_histograms` as boards ``season:<id>:<board>``), and the team league: `leagues` (a
workspace's fair-score rule), `teams`, `team_members` (one team per member) and
`team_proposals` (`/quiz team balance`); a team may follow a platform group
(`teams.link`). Nothing to fill: seasons and teams start empty.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02 01:30:00
"""

import sqlalchemy as sa
from alembic import op

from storage.migrations.columns import counts

revision = "0013"
down_revision = "0012"
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
        "seasons",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("workspace", sa.String(length=64), nullable=False),
        sa.Column("channel_id", BIG_ID, nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=40), nullable=False),
        _time("starts_at"),
        _time("ends_at"),
        _time("first_third_ends"),
        _time("last_third_starts"),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        _time("ended_at", nullable=True),
        _time("podium_leased_at", nullable=True),
        _time("podium_posted_at", nullable=True),
        sa.Column("podium_message_id", sa.String(length=64), nullable=True),
        _fk("seasons", "channel_id", "channels"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seasons")),
    )
    op.create_index(
        "ix_seasons_platform_workspace_state", "seasons", ["platform", "workspace", "state"]
    )
    op.create_table(
        "season_scores",
        sa.Column("season_id", BIG_ID, nullable=False),
        sa.Column("board", sa.BigInteger(), nullable=False),
        sa.Column("member_id", BIG_ID, nullable=False),
        *counts("points", "correct", "answered"),
        _time("reached_at"),
        *counts("current_streak", "best_streak", "early_answered", "early_correct", "late_answered", "late_correct", "accuracy"),
        _fk("season_scores", "season_id", "seasons"),
        _fk("season_scores", "member_id", "members"),
        sa.PrimaryKeyConstraint("season_id", "board", "member_id", name=op.f("pk_season_scores")),
    )
    op.create_index(
        "ix_season_scores_rank",
        "season_scores",
        ["season_id", "board", sa.text("points DESC"), sa.text("correct DESC"), "reached_at", "member_id"],
    )
    op.create_index("ix_season_scores_member_id", "season_scores", ["member_id"])
    op.create_index(
        "ix_season_scores_accuracy",
        "season_scores",
        [
            "season_id",
            "board",
            sa.text("accuracy DESC"),
            sa.text("correct DESC"),
            "reached_at",
            "member_id",
        ],
        postgresql_where=sa.text("answered >= 5"),
        sqlite_where=sa.text("answered >= 5"),
    )
    op.create_table(
        "season_topics",
        sa.Column("season_id", BIG_ID, nullable=False),
        sa.Column("member_id", BIG_ID, nullable=False),
        sa.Column("topic", sa.String(length=80), nullable=False),
        *counts("answered", "correct", "points"),
        _fk("season_topics", "season_id", "seasons"),
        _fk("season_topics", "member_id", "members"),
        sa.PrimaryKeyConstraint("season_id", "member_id", "topic", name=op.f("pk_season_topics")),
    )
    op.create_index("ix_season_topics_member_id", "season_topics", ["member_id"])
    op.create_table(
        "leagues",
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("workspace", sa.String(length=64), nullable=False),
        sa.Column("rule", sa.String(length=16), nullable=False),
        sa.PrimaryKeyConstraint("platform", "workspace", name=op.f("pk_leagues")),
    )
    op.create_table(
        "teams",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("workspace", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("name_key", sa.String(length=32), nullable=False),
        _time("created_at"),
        sa.Column("link", sa.String(length=64), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_teams")),
        sa.UniqueConstraint("platform", "workspace", "name_key", name=op.f("uq_teams_platform")),
    )
    op.create_table(
        "team_members",
        sa.Column("member_id", BIG_ID, nullable=False),
        sa.Column("team_id", BIG_ID, nullable=False),
        _time("joined_at"),
        _fk("team_members", "member_id", "members"),
        _fk("team_members", "team_id", "teams"),
        sa.PrimaryKeyConstraint("member_id", name=op.f("pk_team_members")),
    )
    op.create_index(op.f("ix_team_members_team_id"), "team_members", ["team_id"])
    op.create_table(
        "team_proposals",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("workspace", sa.String(length=64), nullable=False),
        sa.Column("teams", sa.Text(), nullable=False),
        _time("created_at"),
        _time("accepted_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_team_proposals")),
    )


def downgrade() -> None:
    op.drop_table("team_proposals")
    op.drop_index(op.f("ix_team_members_team_id"), table_name="team_members")
    op.drop_table("team_members")
    op.drop_table("teams")
    op.drop_table("leagues")
    op.drop_index("ix_season_topics_member_id", table_name="season_topics")
    op.drop_table("season_topics")
    op.drop_index("ix_season_scores_accuracy", table_name="season_scores")
    op.drop_index("ix_season_scores_member_id", table_name="season_scores")
    op.drop_index("ix_season_scores_rank", table_name="season_scores")
    op.drop_table("season_scores")
    op.drop_index("ix_seasons_platform_workspace_state", table_name="seasons")
    op.drop_table("seasons")
    op.execute("DELETE FROM score_histograms WHERE board LIKE 'season:%'")
