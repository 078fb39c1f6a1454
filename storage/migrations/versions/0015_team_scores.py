"""team boards' aggregate

Adds `team_scores`: a team's members summed on one board period (members with an
answer, the three best members' points, everyone's points), so a team board reads a row
per team instead of a row per member. The close keeps it for its answerers' teams, a
change of a team's members recomputes it (`storage.team_fold`). Filled here for the
periods a team board can show: all time, the latest days, weeks and months of each
workspace with teams, and its active seasons.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02 08:00:00
"""

from datetime import date

import sqlalchemy as sa
from alembic import op

from storage.migrations.columns import counts

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
# A team's members on each board period of its workspace (the periods its histograms
# have) and on each of its seasons, ranked within the team, summed per team and period.
SUMMED = """
INSERT INTO team_scores (team_id, board, starts, active, top3, points)
SELECT team_id, board, starts,
       SUM(CASE WHEN answered > 0 THEN 1 ELSE 0 END),
       SUM(CASE WHEN place <= 3 THEN points ELSE 0 END),
       SUM(points)
FROM (
    SELECT team_id, board, starts, points, answered,
           ROW_NUMBER() OVER (PARTITION BY team_id, board, starts ORDER BY points DESC)
               AS place
    FROM ({rows}) r
) m
GROUP BY team_id, board, starts
"""
PERIODS = """
SELECT tm.team_id, k.board, k.starts, s.points, s.answered
FROM (SELECT DISTINCT board, starts FROM score_histograms
      WHERE board IN (:day, :week, :month, :all)) k
JOIN teams t ON t.platform = :platform AND t.workspace = :workspace
JOIN team_members tm ON tm.team_id = t.id
JOIN score_periods s ON s.board = k.board AND s.starts = k.starts AND s.member_id = tm.member_id
"""
SEASONS = """
SELECT tm.team_id, 'season:' || CAST(se.id AS VARCHAR(20)) || '\\:0' AS board,
       :all_time AS starts, s.points, s.answered
FROM seasons se
JOIN teams t ON t.platform = se.platform AND t.workspace = se.workspace
JOIN team_members tm ON tm.team_id = t.id
JOIN season_scores s ON s.season_id = se.id AND s.board = 0 AND s.member_id = tm.member_id
WHERE se.platform = :platform AND se.workspace = :workspace
"""


def upgrade() -> None:
    op.create_table(
        "team_scores",
        sa.Column("team_id", BIG_ID, nullable=False),
        sa.Column("board", sa.String(length=120), nullable=False),
        sa.Column("starts", sa.Date(), nullable=False),
        *counts("active", "top3", "points"),
        sa.ForeignKeyConstraint(
            ["team_id"], ["teams.id"], name=op.f("fk_team_scores_team_id_teams")
        ),
        sa.PrimaryKeyConstraint("team_id", "board", "starts", name=op.f("pk_team_scores")),
    )
    _backfill()


def _backfill() -> None:
    conn = op.get_bind()
    periods = sa.text(SUMMED.format(rows=PERIODS))
    seasons = sa.text(SUMMED.format(rows=SEASONS)).bindparams(
        sa.bindparam("all_time", type_=sa.Date())
    )
    leagues = conn.execute(sa.text("SELECT DISTINCT platform, workspace FROM teams")).all()
    for platform, workspace in leagues:
        where = {"platform": platform, "workspace": workspace}
        boards = {w: f"workspace:{platform}:{workspace}:{w}" for w in ("day", "week", "month", "all")}
        conn.execute(periods, {**where, **boards})
        conn.execute(seasons, {**where, "all_time": date(1970, 1, 1)})


def downgrade() -> None:
    op.drop_table("team_scores")
