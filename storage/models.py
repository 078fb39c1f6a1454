"""ORM models. Every time column is UTC (timezone-aware in Python, naive UTC on SQLite).

Uniqueness does the hard work: one answer per (post, member), one post per
(schedule, slot); state changes are conditional updates.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite's INTEGER PRIMARY KEY is the rowid alias only for INTEGER, not BIGINT.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UtcDateTime(TypeDecorator[datetime]):
    """Stores aware datetimes as UTC; returns aware UTC datetimes on every backend."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column; use an aware datetime")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class _Tally:
    """A member's total on a board: points, correct answers, answers, and when it reached
    its points (the tie-break: who got there first)."""

    points: Mapped[int] = mapped_column(Integer, default=0)
    correct: Mapped[int] = mapped_column(Integer, default=0)
    answered: Mapped[int] = mapped_column(Integer, default=0)
    reached_at: Mapped[datetime] = mapped_column(UtcDateTime())


class _TopicTally:
    """A member's answers and correct answers on one topic (keyed after the row's scope)."""

    member_id: Mapped[int] = mapped_column(ForeignKey("members.id"), primary_key=True)
    topic: Mapped[str] = mapped_column(String(80), primary_key=True)
    answered: Mapped[int] = mapped_column(Integer, default=0)
    correct: Mapped[int] = mapped_column(Integer, default=0)


class _Streaks:
    """A member's current and best streak of correct answers."""

    current_streak: Mapped[int] = mapped_column(Integer, default=0)
    best_streak: Mapped[int] = mapped_column(Integer, default=0)


class _WorkspaceRow:
    """A row with a generated id, of one platform workspace (Slack team, Discord guild);
    these columns come first in its table (`sort_order`)."""

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True, sort_order=-1)
    platform: Mapped[str] = mapped_column(String(16), sort_order=-1)
    workspace: Mapped[str] = mapped_column(String(64), sort_order=-1)


class ChannelRow(Base, _WorkspaceRow):
    __tablename__ = "channels"
    __table_args__ = (UniqueConstraint("platform", "workspace", "channel"),)

    channel: Mapped[str] = mapped_column(String(64))
    locale: Mapped[str] = mapped_column(String(8), default="en")
    timezone: Mapped[str] = mapped_column(String(64), default="UTC")
    demo_policy: Mapped[str] = mapped_column(String(16), default="auto")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    # The `/quiz ask` cooldown (migration 0006): taken by a conditional update, so two
    # replicas cannot both pass it.
    last_ask_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # The share of picks that are generated questions, in percent (migration 0007).
    generated_share: Mapped[int] = mapped_column(SmallInteger, default=25, server_default="25")
    # Which packs the channel's picks draw from (migration 0008, `/quiz packs`).
    builtin_pack: Mapped[bool] = mapped_column(Boolean, default=True, server_default=text("true"))
    team_pack: Mapped[bool] = mapped_column(Boolean, default=True, server_default=text("true"))


class MemberRow(Base, _WorkspaceRow):
    __tablename__ = "members"
    __table_args__ = (UniqueConstraint("platform", "workspace", "user_id"),)

    user_id: Mapped[str] = mapped_column(String(64))
    display_name: Mapped[str] = mapped_column(String(128), default="")
    locale: Mapped[str | None] = mapped_column(String(8), nullable=True)


class QuestionVersionRow(Base):
    """The exact content a post showed: posts keep the hash, edits never rewrite history."""

    __tablename__ = "question_versions"

    hash: Mapped[str] = mapped_column(String(32), primary_key=True)
    question_id: Mapped[str] = mapped_column(String(80), index=True)
    data: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class ScheduleRow(Base):
    __tablename__ = "schedules"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"), index=True)
    timezone: Mapped[str] = mapped_column(String(64))
    local_time: Mapped[str | None] = mapped_column(String(5), nullable=True)
    weekdays: Mapped[str | None] = mapped_column(String(64), nullable=True)
    cron: Mapped[str | None] = mapped_column(String(128), nullable=True)
    window_seconds: Mapped[int | None] = mapped_column(Integer, nullable=True)
    demo_policy: Mapped[str] = mapped_column(String(16), default="auto")
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    created_by: Mapped[str] = mapped_column(String(64), default="")


class PostRow(Base):
    __tablename__ = "posts"
    __table_args__ = (
        UniqueConstraint("schedule_id", "slot_at"),
        Index("ix_posts_state_closes_at", "state", "closes_at"),
        Index("ix_posts_channel_id_id", "channel_id", "id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"))
    question_id: Mapped[str] = mapped_column(String(80))
    question_hash: Mapped[str] = mapped_column(ForeignKey("question_versions.hash"))
    correct_choice: Mapped[int] = mapped_column(SmallInteger)
    choice_count: Mapped[int] = mapped_column(SmallInteger)
    kind: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(16))
    locale: Mapped[str] = mapped_column(String(8))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    closes_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    closed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    message_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    answer_count: Mapped[int] = mapped_column(Integer, default=0)
    schedule_id: Mapped[int | None] = mapped_column(ForeignKey("schedules.id"), nullable=True)
    slot_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    practice_member_id: Mapped[int | None] = mapped_column(ForeignKey("members.id"), nullable=True)
    # The reconciler's send lease (migration 0004): a claimed post is resent only by whoever
    # moves send_leased_at forward; send_attempts counts those resends.
    send_attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    send_leased_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # The reveal (migration 0005): a closed post waits for its reveal until revealed_at is
    # set; the reconciler retries it only under the reveal lease (reveal_leased_at, taken by
    # the close itself and moved forward by each retry; reveal_attempts counts them).
    revealed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    reveal_leased_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    reveal_attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


# A member's open practice post is looked up (and closed) on each `/quiz practice`.
Index("ix_posts_practice_member_id", PostRow.practice_member_id)
# Closed posts whose reveal was never posted (the reconciler's retry list): a partial
# index, so it stays as small as that list however many posts there are.
UNREVEALED = (
    "state = 'closed' AND revealed_at IS NULL AND kind <> 'practice' AND message_id IS NOT NULL"
)
Index(
    "ix_posts_unrevealed",
    PostRow.state,  # leading, so SQLite prefers it to ix_posts_state_closes_at
    PostRow.closed_at,
    postgresql_where=text(UNREVEALED),
    sqlite_where=text(UNREVEALED),
)


class AnswerRow(Base):
    __tablename__ = "answers"
    __table_args__ = (UniqueConstraint("post_id", "member_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id"))
    member_id: Mapped[int] = mapped_column(ForeignKey("members.id"))
    choice: Mapped[int] = mapped_column(SmallInteger)
    correct: Mapped[bool] = mapped_column(Boolean)
    answered_at: Mapped[datetime] = mapped_column(UtcDateTime())
    # A typed "predict the number" answer (migration 0007); NULL for a button's answer.
    value: Mapped[float | None] = mapped_column(Float, nullable=True)


# A member's answers, newest first (the dashboard's answer history, forget-me, the data
# file): an index range whatever the table's size (migration 0011; PostgreSQL's index on
# member_id alone made it a backward scan of the whole table).
Index("ix_answers_member_id_id", AnswerRow.member_id, AnswerRow.id)


class ScoreRow(Base, _Tally, _Streaks):
    """All-time aggregate per (channel, member), kept in step when a post closes."""

    __tablename__ = "scores"
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"), primary_key=True)
    member_id: Mapped[int] = mapped_column(ForeignKey("members.id"), primary_key=True)


class ScoreDayRow(Base, _Tally):
    """Per-day aggregate (the channel's local date) so windowed boards never scan answers."""

    __tablename__ = "score_days"
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"), primary_key=True)
    member_id: Mapped[int] = mapped_column(ForeignKey("members.id"), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)


class ScorePeriodRow(Base, _Tally):
    """Totals per board period, kept in step when a post closes, so no board sums rows at
    read time: a channel's week and month, and a workspace's day, week, month and all-time
    (`board` names it, e.g. ``channel:7:week``, ``workspace:slack:T1:all``; `starts` is the
    first local day of the period). A channel's day and all-time boards are `score_days`
    and `scores`."""

    __tablename__ = "score_periods"

    board: Mapped[str] = mapped_column(String(120), primary_key=True)
    starts: Mapped[date] = mapped_column(Date, primary_key=True)
    member_id: Mapped[int] = mapped_column(ForeignKey("members.id"), primary_key=True)


class ScoreHistogramRow(Base):
    """How many players of a board period have each number of points, so a board's number
    of players and a caller's rank (1 + players with more points) are a sum over a few
    hundred rows at most, however many players there are. Boards as in `score_periods`,
    plus ``channel:<id>:all`` (`scores`) and ``channel:<id>:day`` (`score_days`)."""

    __tablename__ = "score_histograms"

    board: Mapped[str] = mapped_column(String(120), primary_key=True)
    starts: Mapped[date] = mapped_column(Date, primary_key=True)
    points: Mapped[int] = mapped_column(Integer, primary_key=True)
    players: Mapped[int] = mapped_column(Integer, default=0)


class ScoreTopicRow(Base, _TopicTally):
    """Answers and correct answers per (channel, member, topic): personal stats per topic."""

    __tablename__ = "score_topics"

    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"), primary_key=True)


# The board order (points, then correct answers, then who got there first): a board's top
# 10 and a caller's rank are index range scans, whatever the number of players.
def _rank_index(name: str, model: type[_Tally], *board: Any) -> Index:
    return Index(
        name,
        *board,
        model.points.desc(),
        model.correct.desc(),
        model.reached_at,
        model.member_id,  # type: ignore[attr-defined]
    )


_rank_index("ix_scores_rank", ScoreRow, ScoreRow.channel_id)
_rank_index("ix_score_days_rank", ScoreDayRow, ScoreDayRow.channel_id, ScoreDayRow.day)
_rank_index("ix_score_periods_rank", ScorePeriodRow, ScorePeriodRow.board, ScorePeriodRow.starts)


class PracticeCardRow(Base):
    """Leitner box per (member, question) for spaced-repetition practice."""

    __tablename__ = "practice_cards"

    member_id: Mapped[int] = mapped_column(ForeignKey("members.id"), primary_key=True)
    question_id: Mapped[str] = mapped_column(String(80), primary_key=True)
    box: Mapped[int] = mapped_column(SmallInteger, default=1)
    due_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_answered_at: Mapped[datetime] = mapped_column(UtcDateTime())


class DemoRunRow(Base):
    __tablename__ = "demo_runs"
    __table_args__ = (Index("ix_demo_runs_state", "state"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"))
    post_id: Mapped[int | None] = mapped_column(ForeignKey("posts.id"), nullable=True)
    parent_message_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    status_message_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    demo: Mapped[str] = mapped_column(String(64))
    locale: Mapped[str] = mapped_column(String(8))
    params: Mapped[str] = mapped_column(Text, default="{}")
    state: Mapped[str] = mapped_column(String(16))
    device: Mapped[str] = mapped_column(String(200), default="")
    report: Mapped[str] = mapped_column(Text, default="")
    metrics: Mapped[str] = mapped_column(Text, default="{}")
    error: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    posted_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


# One run per question and demo (migration 0006): the reveal's AUTO run and any number of
# button clicks, on any replica, share it.
Index(
    "uq_demo_runs_post_demo",
    DemoRunRow.post_id,
    DemoRunRow.demo,
    unique=True,
    postgresql_where=text("post_id IS NOT NULL"),
    sqlite_where=text("post_id IS NOT NULL"),
)


class DeliveryRow(Base):
    """A platform request acknowledged to its sender (migration 0006): the key makes a
    redelivery harmless on every replica, and an unfinished row is replayed after a crash."""

    __tablename__ = "deliveries"

    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    platform: Mapped[str] = mapped_column(String(16))
    received_at: Mapped[datetime] = mapped_column(UtcDateTime())
    # Who works on it until when: a replay takes rows whose lease passed.
    leased_until: Mapped[datetime] = mapped_column(UtcDateTime())
    attempts: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    done_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # The request as received (JSON), kept until done: it holds the reply URL or token.
    payload: Mapped[str | None] = mapped_column(Text, nullable=True)


UNFINISHED_DELIVERY = "done_at IS NULL"
Index(
    "ix_deliveries_unfinished",
    DeliveryRow.received_at,
    postgresql_where=text(UNFINISHED_DELIVERY),
    sqlite_where=text(UNFINISHED_DELIVERY),
)


class TeamPackRow(Base):
    """A workspace's team pack (migration 0008): its revision, bumped by every change to
    what its picks may draw (an approval, a retirement), so each replica reloads the
    pack when, and only when, it changed; and the channel where submissions are reviewed."""

    __tablename__ = "team_packs"

    platform: Mapped[str] = mapped_column(String(16), primary_key=True)
    workspace: Mapped[str] = mapped_column(String(64), primary_key=True)
    revision: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    review_channel_id: Mapped[int | None] = mapped_column(ForeignKey("channels.id"), nullable=True)


class TeamQuestionRow(Base, _WorkspaceRow):
    """A team question (migration 0008), submitted in chat or imported. Unique per
    workspace and content hash: importing a file twice adds nothing. The author is
    NULL once they asked to be forgotten (the question stays)."""

    __tablename__ = "team_questions"
    __table_args__ = (
        UniqueConstraint("platform", "workspace", "question_hash"),
        Index("ix_team_questions_platform_workspace_state", "platform", "workspace", "state"),
    )

    question_id: Mapped[str] = mapped_column(String(80))
    question_hash: Mapped[str] = mapped_column(String(32))
    data: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16))
    origin: Mapped[str] = mapped_column(String(16))
    author_member_id: Mapped[int | None] = mapped_column(ForeignKey("members.id"), nullable=True)
    channel_id: Mapped[int | None] = mapped_column(ForeignKey("channels.id"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    decided_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    decided_by_member_id: Mapped[int | None] = mapped_column(
        ForeignKey("members.id"), nullable=True
    )
    reason: Mapped[str] = mapped_column(Text, default="", server_default="")
    review_message_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    review_channel_id: Mapped[int | None] = mapped_column(ForeignKey("channels.id"), nullable=True)


class RetiredQuestionRow(Base):
    """A question (bank or team) a workspace's admins retired (migration 0008): never
    picked there again; posts that asked it keep their version."""

    __tablename__ = "retired_questions"

    platform: Mapped[str] = mapped_column(String(16), primary_key=True)
    workspace: Mapped[str] = mapped_column(String(64), primary_key=True)
    question_id: Mapped[str] = mapped_column(String(80), primary_key=True)
    retired_at: Mapped[datetime] = mapped_column(UtcDateTime())
    retired_by_member_id: Mapped[int | None] = mapped_column(
        ForeignKey("members.id"), nullable=True
    )


class FlagRow(Base, _WorkspaceRow):
    """A member's report on a question they saw in a post (migration 0008): one per
    (post, member). `member_id` is NULL once the member asked to be forgotten."""

    __tablename__ = "flags"
    __table_args__ = (
        UniqueConstraint("post_id", "member_id"),
        Index("ix_flags_platform_workspace_question_id", "platform", "workspace", "question_id"),
    )

    question_id: Mapped[str] = mapped_column(String(80))
    question_hash: Mapped[str] = mapped_column(String(32))
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id"))
    member_id: Mapped[int | None] = mapped_column(ForeignKey("members.id"), nullable=True)
    reason: Mapped[str] = mapped_column(String(16))
    note: Mapped[str] = mapped_column(Text, default="", server_default="")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class ErasureRow(Base):
    """A member's erasure fence (migration 0009, `storage.erasures`): their clicks stamped
    at or before `erased_at` are not kept, whichever replica or queue still holds them.
    Purged an hour later; it holds the platform's user id only."""

    __tablename__ = "erasures"

    platform: Mapped[str] = mapped_column(String(16), primary_key=True)
    workspace: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    erased_at: Mapped[datetime] = mapped_column(UtcDateTime())


class ScoreQuestionRow(Base):
    """Per (channel, question id): closed posts, answers and correct answers (migration
    0010), folded at close like the boards: the dashboard's question calibration and
    accuracy by topic, without reading the answers."""

    __tablename__ = "score_questions"

    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"), primary_key=True)
    question_id: Mapped[str] = mapped_column(String(80), primary_key=True)
    topic: Mapped[str] = mapped_column(String(80))
    asked: Mapped[int] = mapped_column(Integer, default=0)
    answered: Mapped[int] = mapped_column(Integer, default=0)
    correct: Mapped[int] = mapped_column(Integer, default=0)


class ScoreDayTotalRow(Base):
    """Answers and correct answers per (channel, local day), all members together
    (migration 0010): the dashboard's activity chart. Players per day are the day
    board's histogram (`score_histograms`)."""

    __tablename__ = "score_day_totals"

    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    answered: Mapped[int] = mapped_column(Integer, default=0)
    correct: Mapped[int] = mapped_column(Integer, default=0)


# The overview's longest current streaks of a channel: an index range, not a sort.
Index("ix_scores_streak", ScoreRow.channel_id, ScoreRow.current_streak.desc())


class WebSessionRow(Base):
    """A signed-in browser (migration 0010). The cookie carries a random token and its
    signature; only the token's SHA-256 is stored, so this table opens no session."""

    __tablename__ = "web_sessions"
    __table_args__ = (Index("ix_web_sessions_platform_user_id", "platform", "user_id"),)

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    platform: Mapped[str] = mapped_column(String(16))
    user_id: Mapped[str] = mapped_column(String(64))
    display_name: Mapped[str] = mapped_column(String(128), default="")
    # JSON: [{"id": workspace id, "name": its name, "admin": true|false|null}]
    workspaces: Mapped[str] = mapped_column(Text)
    csrf: Mapped[str] = mapped_column(String(64))
    locale: Mapped[str | None] = mapped_column(String(8), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)


class WebSignInRow(Base):
    """A sign-in under way (migration 0010): the OAuth state's SHA-256 and its PKCE
    verifier, taken once (a delete) before it expires, on any replica."""

    __tablename__ = "web_sign_ins"

    state_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    provider: Mapped[str] = mapped_column(String(16))
    verifier: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)


class WebRateRow(Base):
    """Sign-in attempts per (client, window) (migration 0010), shared by the replicas."""

    __tablename__ = "web_rates"

    key: Mapped[str] = mapped_column(String(160), primary_key=True)
    window_start: Mapped[datetime] = mapped_column(UtcDateTime(), primary_key=True)
    hits: Mapped[int] = mapped_column(Integer, default=0)


class WebClinicRow(Base, _WorkspaceRow):
    """A snapshot sent from the dashboard (migration 0010): its progress line, then the
    result as chat shows it (title, text with the table and the line to copy, the plot);
    never the file, which is deleted after the run. Read only by its uploader; purged a
    day after the run."""

    __tablename__ = "web_clinic"
    __table_args__ = (Index("ix_web_clinic_member", "platform", "workspace", "user_id"),)

    user_id: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(200))
    done: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[str] = mapped_column(Text, default="")
    title: Mapped[str] = mapped_column(Text, default="")
    body: Mapped[str] = mapped_column(Text, default="")
    png: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class LiveRoundRow(Base):
    """A live round (migration 0012, `storage.live`): a lobby, then its questions one after
    another. `step` says where it is (0: the lobby; 2k+1: question k open; 2k+2: question k
    closed, the next one due) and `next_at` when that step's work is due; whoever moves
    `leased_at` forward owns the step's work until the lease passes, and only the owner of
    a step advances it (`WHERE step = …`). `active_channel_id` is the channel while the
    round is in its lobby or running, NULL after: one live round per channel."""

    __tablename__ = "live_rounds"
    __table_args__ = (Index("ix_live_rounds_state_next_at", "state", "next_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"))
    active_channel_id: Mapped[int | None] = mapped_column(BigId, nullable=True, unique=True)
    state: Mapped[str] = mapped_column(String(16))
    questions: Mapped[int] = mapped_column(SmallInteger)
    seconds: Mapped[int] = mapped_column(SmallInteger)
    topic: Mapped[str | None] = mapped_column(String(80), nullable=True)
    counted: Mapped[bool] = mapped_column(Boolean)
    locale: Mapped[str] = mapped_column(String(8))
    started_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    step: Mapped[int] = mapped_column(Integer)
    next_at: Mapped[datetime] = mapped_column(UtcDateTime())
    leased_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    stop_requested: Mapped[bool] = mapped_column(Boolean)
    lobby_message_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    ended_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # Why it ended: "" (every question), "stopped", "cancelled"; the podium once posted.
    end_note: Mapped[str] = mapped_column(String(16))
    podium_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class LiveQuestionRow(Base):
    """Question k of a live round: its post (claimed with this row, in one transaction),
    when its message was stored (the start of its speed points) and when its results were
    posted."""

    __tablename__ = "live_questions"

    round_id: Mapped[int] = mapped_column(ForeignKey("live_rounds.id"), primary_key=True)
    k: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id"), unique=True)
    opened_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    results_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class LivePlayerRow(Base):
    """Who pressed Join in a live round's lobby."""

    __tablename__ = "live_players"

    round_id: Mapped[int] = mapped_column(ForeignKey("live_rounds.id"), primary_key=True)
    member_id: Mapped[int] = mapped_column(ForeignKey("members.id"), primary_key=True)
    joined_at: Mapped[datetime] = mapped_column(UtcDateTime())


class LiveScoreRow(Base):
    """The live board: per (channel, member), the points of every finished live round,
    folded once, when the round ends (apart from the daily boards)."""

    __tablename__ = "live_scores"

    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"), primary_key=True)
    member_id: Mapped[int] = mapped_column(ForeignKey("members.id"), primary_key=True)
    points: Mapped[int] = mapped_column(Integer)
    correct: Mapped[int] = mapped_column(Integer)
    answered: Mapped[int] = mapped_column(Integer)
    rounds: Mapped[int] = mapped_column(Integer)
    reached_at: Mapped[datetime] = mapped_column(UtcDateTime())


class SeasonRow(Base):
    """A season (migration 0013): a named competition over a channel's posts (scope
    ``channel``) or every channel of a workspace (``workspace``), from `starts_at` to
    `ends_at`. `state` goes ``active`` -> ``ended`` once, by a conditional update; the
    podium is posted under a lease (`podium_leased_at`) and marked once (`podium_posted_at`),
    like reveals. The season's first and last thirds (of its planned length) are fixed at
    the start: the "most improved" award compares them."""

    __tablename__ = "seasons"
    __table_args__ = (
        Index("ix_seasons_platform_workspace_state", "platform", "workspace", "state"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    platform: Mapped[str] = mapped_column(String(16))
    workspace: Mapped[str] = mapped_column(String(64))
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"))  # where it was started
    scope: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(40))
    starts_at: Mapped[datetime] = mapped_column(UtcDateTime())
    ends_at: Mapped[datetime] = mapped_column(UtcDateTime())
    first_third_ends: Mapped[datetime] = mapped_column(UtcDateTime())
    last_third_starts: Mapped[datetime] = mapped_column(UtcDateTime())
    state: Mapped[str] = mapped_column(String(16))
    created_by: Mapped[str] = mapped_column(String(64), default="")
    ended_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    podium_leased_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    podium_posted_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    podium_message_id: Mapped[str | None] = mapped_column(String(64), nullable=True)


class SeasonScoreRow(Base, _Tally, _Streaks):
    """A member's season totals (migration 0013), folded at close: `board` 0 is the whole
    season, a channel id its board in that channel (workspace seasons only). The streak
    is the season's own (scheduled questions of one channel); early/late count the answers
    in the season's first and last thirds."""

    __tablename__ = "season_scores"

    season_id: Mapped[int] = mapped_column(ForeignKey("seasons.id"), primary_key=True)
    board: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    member_id: Mapped[int] = mapped_column(ForeignKey("members.id"), primary_key=True)
    early_answered: Mapped[int] = mapped_column(Integer, default=0)
    early_correct: Mapped[int] = mapped_column(Integer, default=0)
    late_answered: Mapped[int] = mapped_column(Integer, default=0)
    late_correct: Mapped[int] = mapped_column(Integer, default=0)
    # correct / answered in millionths (integer division), kept by the fold: the accuracy
    # board is an index range (`ix_season_scores_accuracy`), not a sort.
    accuracy: Mapped[int] = mapped_column(Integer, default=0)


# The accuracy board's order among members with at least 5 answers (the documented
# minimum, `bot.seasons.MIN_ACCURACY_ANSWERS`): a partial index.
SEASON_ACCURATE = "answered >= 5"
Index(
    "ix_season_scores_accuracy",
    SeasonScoreRow.season_id,
    SeasonScoreRow.board,
    SeasonScoreRow.accuracy.desc(),
    SeasonScoreRow.correct.desc(),
    SeasonScoreRow.reached_at,
    SeasonScoreRow.member_id,
    postgresql_where=text(SEASON_ACCURATE),
    sqlite_where=text(SEASON_ACCURATE),
)
Index(
    "ix_season_scores_rank",
    SeasonScoreRow.season_id,
    SeasonScoreRow.board,
    SeasonScoreRow.points.desc(),
    SeasonScoreRow.correct.desc(),
    SeasonScoreRow.reached_at,
    SeasonScoreRow.member_id,
)
Index("ix_season_scores_member_id", SeasonScoreRow.member_id)


class SeasonTopicRow(Base, _TopicTally):
    """A member's season answers per topic (migration 0013): the podium's best per topic."""

    __tablename__ = "season_topics"

    season_id: Mapped[int] = mapped_column(ForeignKey("seasons.id"), primary_key=True)
    points: Mapped[int] = mapped_column(Integer, default=0)


Index("ix_season_topics_member_id", SeasonTopicRow.member_id)


class LeagueRow(Base):
    """A workspace's team league settings (migration 0013): the fair-score rule."""

    __tablename__ = "leagues"

    platform: Mapped[str] = mapped_column(String(16), primary_key=True)
    workspace: Mapped[str] = mapped_column(String(64), primary_key=True)
    rule: Mapped[str] = mapped_column(String(16), default="top3")


class TeamRow(Base):
    """A team of a workspace's league (migration 0013); its name unique in any case."""

    __tablename__ = "teams"
    __table_args__ = (UniqueConstraint("platform", "workspace", "name_key"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    platform: Mapped[str] = mapped_column(String(16))
    workspace: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(32))
    name_key: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    # The platform group it follows (a Slack user group id, a Discord role id): its
    # members are the group's, refreshed from the platform's API.
    link: Mapped[str | None] = mapped_column(String(64), nullable=True)


class TeamMemberRow(Base):
    """Who is on which team (migration 0013): a member (of one workspace) is on one team
    at most — the primary key says so."""

    __tablename__ = "team_members"

    member_id: Mapped[int] = mapped_column(ForeignKey("members.id"), primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"), index=True)
    joined_at: Mapped[datetime] = mapped_column(UtcDateTime())


class TeamScoreRow(Base):
    """A team's totals on one board period (migration 0015), kept by the close for the
    teams of its answerers and recomputed when a team's members change: `board` and
    `starts` as in `score_periods` (the workspace's boards) or ``season:<id>:0`` (a
    season's whole board, `starts` 1970-01-01). `active` counts the members with an
    answer, `top3` sums the three best members' points, `points` everyone's."""

    __tablename__ = "team_scores"

    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"), primary_key=True)
    board: Mapped[str] = mapped_column(String(120), primary_key=True)
    starts: Mapped[date] = mapped_column(Date, primary_key=True)
    active: Mapped[int] = mapped_column(Integer, default=0)
    top3: Mapped[int] = mapped_column(Integer, default=0)
    points: Mapped[int] = mapped_column(Integer, default=0)


class TeamProposalRow(Base):
    """A `/quiz team balance` proposal (migration 0013), accepted at most once: JSON
    ``[[member id, …], …]`` per team, and its spread of points."""

    __tablename__ = "team_proposals"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    platform: Mapped[str] = mapped_column(String(16))
    workspace: Mapped[str] = mapped_column(String(64))
    teams: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    accepted_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class SlackInstallationRow(Base):
    """A workspace or Enterprise Grid organisation that installed the Slack app through
    OAuth (migration 0014), keyed ``<enterprise id>:<team id>`` (``-`` for none; an
    organisation-wide install has no team). Uninstalling or revoking deletes the tokens
    and sets `uninstalled_at`; the row stays until ``quizbot workspace forget``.
    `refresh_claimed_until` is the token-rotation claim: one replica refreshes, the
    others read its token."""

    __tablename__ = "slack_installations"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    workspace_key: Mapped[str] = mapped_column(String(80), unique=True)
    enterprise_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    team_id: Mapped[str | None] = mapped_column(String(32), nullable=True, index=True)
    is_enterprise_install: Mapped[bool] = mapped_column(Boolean, default=False)
    app_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    enterprise_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    enterprise_url: Mapped[str | None] = mapped_column(String(200), nullable=True)
    team_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    bot_token: Mapped[str | None] = mapped_column(Text, nullable=True)
    bot_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    bot_user_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    bot_scopes: Mapped[str] = mapped_column(Text, default="")
    bot_refresh_token: Mapped[str | None] = mapped_column(Text, nullable=True)
    bot_token_expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    user_id: Mapped[str] = mapped_column(String(32))
    user_token: Mapped[str | None] = mapped_column(Text, nullable=True)
    user_scopes: Mapped[str] = mapped_column(Text, default="")
    user_refresh_token: Mapped[str | None] = mapped_column(Text, nullable=True)
    user_token_expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    token_type: Mapped[str | None] = mapped_column(String(16), nullable=True)
    installed_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
    uninstalled_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    refresh_claimed_until: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class SlackOAuthStateRow(Base):
    """An install under way (migration 0014): the OAuth state's SHA-256, taken once (a
    delete) before it expires, on any replica."""

    __tablename__ = "slack_oauth_states"

    state_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)


class SlackEnterpriseTeamRow(Base):
    """A workspace of an Enterprise Grid organisation (migration 0014), learned from its
    requests: a post to its channels uses the organisation-wide install's token."""

    __tablename__ = "slack_enterprise_teams"

    team_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    enterprise_id: Mapped[str] = mapped_column(String(32))
