"""Slack installations (one deployment, many workspaces)

Adds `slack_installations` (one row per workspace or Enterprise Grid organisation that
installed the app through OAuth: its bot token, the refresh token and expiry when token
rotation is on, the installer, whether it is installed now, and the refresh claim that
keeps two replicas from refreshing at once), `slack_oauth_states` (an install's OAuth
state, only its SHA-256, taken once before it expires) and `slack_enterprise_teams` (the
workspaces of an organisation-wide install, learned from their requests). Nothing to
fill: single-token deployments keep no row here.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02 02:20:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _time(name: str, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "slack_installations",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("workspace_key", sa.String(length=80), nullable=False),
        sa.Column("enterprise_id", sa.String(length=32), nullable=True),
        sa.Column("team_id", sa.String(length=32), nullable=True),
        sa.Column("is_enterprise_install", sa.Boolean(), nullable=False),
        sa.Column("app_id", sa.String(length=32), nullable=True),
        sa.Column("enterprise_name", sa.String(length=200), nullable=True),
        sa.Column("enterprise_url", sa.String(length=200), nullable=True),
        sa.Column("team_name", sa.String(length=200), nullable=True),
        sa.Column("bot_token", sa.Text(), nullable=True),
        sa.Column("bot_id", sa.String(length=32), nullable=True),
        sa.Column("bot_user_id", sa.String(length=32), nullable=True),
        sa.Column("bot_scopes", sa.Text(), nullable=False),
        sa.Column("bot_refresh_token", sa.Text(), nullable=True),
        _time("bot_token_expires_at", nullable=True),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("user_token", sa.Text(), nullable=True),
        sa.Column("user_scopes", sa.Text(), nullable=False),
        sa.Column("user_refresh_token", sa.Text(), nullable=True),
        _time("user_token_expires_at", nullable=True),
        sa.Column("token_type", sa.String(length=16), nullable=True),
        _time("installed_at"),
        _time("updated_at"),
        _time("uninstalled_at", nullable=True),
        _time("refresh_claimed_until", nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_slack_installations")),
        sa.UniqueConstraint("workspace_key", name=op.f("uq_slack_installations_workspace_key")),
    )
    op.create_index(
        op.f("ix_slack_installations_team_id"), "slack_installations", ["team_id"]
    )
    op.create_table(
        "slack_oauth_states",
        sa.Column("state_hash", sa.String(length=64), nullable=False),
        _time("created_at"),
        _time("expires_at"),
        sa.PrimaryKeyConstraint("state_hash", name=op.f("pk_slack_oauth_states")),
    )
    op.create_index(
        op.f("ix_slack_oauth_states_expires_at"), "slack_oauth_states", ["expires_at"]
    )
    op.create_table(
        "slack_enterprise_teams",
        sa.Column("team_id", sa.String(length=32), nullable=False),
        sa.Column("enterprise_id", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("team_id", name=op.f("pk_slack_enterprise_teams")),
    )


def downgrade() -> None:
    op.drop_table("slack_enterprise_teams")
    op.drop_index(op.f("ix_slack_oauth_states_expires_at"), table_name="slack_oauth_states")
    op.drop_table("slack_oauth_states")
    op.drop_index(op.f("ix_slack_installations_team_id"), table_name="slack_installations")
    op.drop_table("slack_installations")
