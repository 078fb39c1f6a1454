"""Ports: the small protocols the core depends on. Adapters, storage and the runner
implement them; the core never imports those packages."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from bot.clinic import ClinicJob, ClinicResult, ProgressCallback
from bot.domain import (
    Answer,
    AnswerOutcome,
    BoardPeriod,
    BoardScope,
    ChannelRef,
    ChannelSettings,
    Delivery,
    DemoJob,
    DemoResult,
    Leaderboard,
    MessageRef,
    PlayerStats,
    Post,
    PostDraft,
    PostKind,
    Question,
    UserRef,
)
from bot.messages import Attachment, Image, Message

if TYPE_CHECKING:
    from bot.dashboard.ports import DashboardRepository
    from bot.demos.runs import DemoRunRepository
    from bot.live.ports import LiveRepository
    from bot.mydata import MemberData
    from bot.practice import PracticeRepository
    from bot.report import ReportRepository
    from bot.scheduling.ports import ScheduleStore
    from bot.seasons import SeasonRepository
    from bot.team import TeamPackRepository
    from bot.teams import TeamRepository


class Chat(Protocol):
    """Outbound calls to one platform."""

    async def post_message(self, channel: ChannelRef, message: Message) -> MessageRef:
        """Post in a channel; returns the platform message."""
        ...

    async def reply_in_thread(self, parent: MessageRef, message: Message) -> MessageRef:
        """Reply in the thread under `parent` (created on first use where needed)."""
        ...

    async def send_private(self, channel: ChannelRef, user: UserRef, message: Message) -> None:
        """An ephemeral message only `user` sees (a DM where the platform has no such thing)."""
        ...

    async def update_message(self, ref: MessageRef, message: Message) -> None:
        """Replace a posted message's content."""
        ...

    async def upload_image(self, parent: MessageRef, image: Image, comment: str = "") -> None:
        """Upload an image to the thread under `parent`."""
        ...


@runtime_checkable
class PrivateFiles(Protocol):
    """A `Chat` that can hand one member a file only they see (Slack: a direct message
    from the bot; the console: a file on disk). A platform without it says so."""

    async def send_file(
        self, channel: ChannelRef, user: UserRef, file: Attachment, comment: str = ""
    ) -> None:
        """Deliver `file` privately to `user` (who asked for it in `channel`)."""
        ...


class QuestionSource(Protocol):
    """Questions made on demand for a channel: the generated families (`questions.families`
    behind the composition root). Never the same scenario twice in a channel."""

    def names(self) -> list[str]:
        """What `/quiz ask <name>` accepts (family ids)."""
        ...

    def next_for(
        self, channel: ChannelRef, history: Sequence[str], name: str | None = None
    ) -> Question:
        """The channel's next generated question (of family `name`, else any);
        `history` is the ids asked in the channel."""
        ...


class PostRepository(Protocol):
    async def create(
        self,
        draft: PostDraft,
        kind: PostKind,
        *,
        schedule_id: int | None = None,
        slot_at: datetime | None = None,
        practice_user: UserRef | None = None,
    ) -> Post | None:
        """Claim a post (state CLAIMED). None when the (schedule, slot) is already claimed."""
        ...

    async def mark_posted(self, post_id: int, message: MessageRef) -> Post:
        """Store the platform message and open the post (CLAIMED -> OPEN)."""
        ...

    async def get(self, post_id: int) -> Post | None: ...

    async def open_in_channel(self, channel: ChannelRef) -> list[Post]:
        """Open channel posts (not practice), oldest first."""
        ...

    async def history(self, channel: ChannelRef, limit: int = 1000) -> list[Post]:
        """Channel posts (not practice), newest first."""
        ...

    async def unsent_in_channel(self, channel: ChannelRef) -> list[Post]:
        """Channel posts claimed but not on the platform yet."""
        ...

    async def discard_unsent(self, post_id: int) -> bool:
        """Delete a claimed post that can never be sent."""
        ...

    async def close(self, post_id: int, closed_at: datetime) -> Post | None:
        """Close an open post exactly once (conditional update). None if it was not open.
        The winner holds the post's reveal lease from ``closed_at``; a post with no public
        reveal (practice, never sent) is marked revealed at once."""
        ...

    async def due(self, now: datetime, limit: int = 100) -> list[Post]:
        """Open posts whose close time has passed."""
        ...

    async def unsent(self, older_than: datetime, limit: int = 100) -> list[Post]:
        """Claimed posts that never got their platform message."""
        ...

    async def claim_reveal(self, post_id: int, now: datetime, lease: timedelta) -> bool:
        """Take the reveal lease of a closed, unrevealed post whose last attempt (or close)
        is at least ``lease`` old: one caller per lease period gets True."""
        ...

    async def mark_revealed(self, post_id: int, at: datetime) -> bool:
        """Record that the reveal was posted; False when it already was."""
        ...

    async def unrevealed(
        self, older_than: datetime, limit: int = 100, platforms: Collection[str] | None = None
    ) -> list[Post]:
        """Closed posts whose reveal was never posted, last tried (or closed) no later than
        ``older_than``, oldest first; optionally only on ``platforms``."""
        ...

    async def oldest_unrevealed(self, platforms: Collection[str] | None = None) -> datetime | None:
        """When the oldest pending reveal attempt began (its lease, else its close)."""
        ...


class AnswerRepository(Protocol):
    async def record(
        self,
        post_id: int,
        user: UserRef,
        choice: int,
        at: datetime,
        channel: ChannelRef | None = None,
        *,
        value: float | None = None,
        correct: bool | None = None,
    ) -> AnswerOutcome:
        """Record the first answer of a user on an open post (the first one counts).

        The outcome's status is RECORDED, ALREADY_ANSWERED (with the choice that counts),
        CLOSED, UNKNOWN_POST, INVALID_CHOICE, WRONG_CHANNEL (`channel` given and not the
        post's) or ERASED (the user was erased after `at`: nothing of theirs is kept);
        `question` is left for the caller. Raises `StorageUnavailable` when the
        database did not answer within the retry budget. A typed answer gives its `value`
        and whether it is `correct` (its `choice` may be -1: no choice matches it).
        """
        ...

    async def values(self, post_id: int) -> list[float]:
        """The typed answers of a post, in the order they were recorded."""
        ...

    async def for_post(self, post_id: int) -> list[Answer]:
        """Answers in the order they were recorded."""
        ...

    async def distribution(self, post_id: int, choices: int) -> tuple[int, ...]: ...

    async def first_correct(self, post_id: int) -> UserRef | None: ...


class ScoreRepository(Protocol):
    async def leaderboard(
        self,
        channel: ChannelRef,
        caller: UserRef | None,
        limit: int = 10,
        *,
        scope: BoardScope = BoardScope.CHANNEL,
        period: BoardPeriod | None = None,
    ) -> Leaderboard:
        """The top `limit` of a board (all-time when `period` is None), the number of
        players and the caller's own row, even outside the top."""
        ...

    async def player_stats(self, channel: ChannelRef, user: UserRef) -> PlayerStats | None:
        """A member's all-time results in a channel; None before their first closed answer."""
        ...

    async def players_stats(
        self, channels: Sequence[ChannelRef], users: Sequence[UserRef]
    ) -> dict[tuple[ChannelRef, str], PlayerStats]:
        """`player_stats` of each (channel, member) of one workspace, keyed by (channel,
        member key); a pair without results is absent. A few statements for them all."""
        ...

    async def leaderboards(
        self,
        channel: ChannelRef,
        callers: Sequence[UserRef],
        limit: int = 10,
        *,
        scope: BoardScope = BoardScope.CHANNEL,
        period: BoardPeriod | None = None,
    ) -> dict[str, Leaderboard]:
        """`leaderboard` for each of `callers` (one workspace's), by member key."""
        ...


class SettingsRepository(Protocol):
    async def get(self, channel: ChannelRef) -> ChannelSettings: ...

    async def save(self, settings: ChannelSettings) -> None: ...

    async def claim_ask(
        self, channel: ChannelRef, now: datetime, cooldown: timedelta
    ) -> timedelta | None:
        """Take the channel's `/quiz ask` cooldown: None when taken, else the time left."""
        ...

    async def release_ask(self, channel: ChannelRef, taken_at: datetime) -> None:
        """Give back a cooldown taken at `taken_at` (nothing was posted)."""
        ...


class DeliveryLog(Protocol):
    """Platform requests acknowledged to their sender (see `bot.deliveries`)."""

    async def claim(
        self,
        key: str,
        platform: str,
        now: datetime,
        lease: timedelta,
        payload: Mapping[str, Any] | None = None,
    ) -> bool:
        """Record a request before acknowledging it; False for a redelivery."""
        ...

    async def finish(self, key: str, now: datetime) -> None: ...

    async def take_unfinished(
        self, platform: str, now: datetime, lease: timedelta, max_age: timedelta, limit: int = 100
    ) -> list[Delivery]:
        """Unfinished requests whose handler died (lease passed), under a new lease."""
        ...

    async def prune(self, older_than: datetime) -> int: ...


class QuestionVersions(Protocol):
    """The exact question content each post showed, by content hash."""

    async def save(self, question: Question) -> None: ...

    async def get(self, content_hash: str) -> Question | None: ...


class Store(Protocol):
    """The repositories together (one database)."""

    @property
    def posts(self) -> PostRepository: ...

    @property
    def answers(self) -> AnswerRepository: ...

    @property
    def scores(self) -> ScoreRepository: ...

    @property
    def settings(self) -> SettingsRepository: ...

    @property
    def questions(self) -> QuestionVersions: ...

    @property
    def deliveries(self) -> DeliveryLog: ...


class FeatureStore(Store, Protocol):
    """The whole store, as the features see it: the quiz's repositories and theirs."""

    @property
    def team(self) -> TeamPackRepository: ...

    @property
    def members(self) -> MemberData: ...

    @property
    def practice(self) -> PracticeRepository: ...

    @property
    def reports(self) -> ReportRepository: ...

    @property
    def schedules(self) -> ScheduleStore: ...

    @property
    def demo_runs(self) -> DemoRunRepository: ...

    @property
    def dashboard(self) -> DashboardRepository: ...

    @property
    def live(self) -> LiveRepository: ...

    @property
    def seasons(self) -> SeasonRepository: ...

    @property
    def leagues(self) -> TeamRepository: ...


class DemoRunner(Protocol):
    """Runs registered demos somewhere (subprocess, Celery worker) or nowhere (`off`)."""

    @property
    def enabled(self) -> bool: ...

    async def submit(self, job: DemoJob) -> None:
        """Queue a job; returns at once."""
        ...

    async def result(self, run_id: int, timeout: float) -> DemoResult | None:
        """Wait up to `timeout` seconds for a submitted job's result."""
        ...


class ClinicRunner(Protocol):
    """Runs the memory clinic on a snapshot in the runner's sandbox (never in the bot)."""

    async def run_clinic(
        self, job: ClinicJob, progress: ProgressCallback | None = None
    ) -> ClinicResult:
        """Analyse `job` and return the result; `progress` is awaited with each new stage
        (queued, reading, replaying n/m, done), coalesced while a call is still running.

        Raises `ClinicInputError` (bad file, over QUIZBOT_CLINIC_MAX_MB),
        `ClinicUnavailableError` (QUIZBOT_RUNNER=off) or `ClinicFailedError` (timeout,
        crash); each message is in the job's locale. An uploaded file
        (`ClinicJob.upload`) is deleted in every case.
        """
        ...


class Runner(DemoRunner, ClinicRunner, Protocol):
    """What `bot.app.open_runner` gives the features: demos and the clinic."""


__all__ = [
    "AnswerRepository",
    "Chat",
    "ClinicRunner",
    "DeliveryLog",
    "DemoRunner",
    "FeatureStore",
    "PostRepository",
    "PrivateFiles",
    "QuestionSource",
    "QuestionVersions",
    "Runner",
    "ScoreRepository",
    "SettingsRepository",
    "Store",
]
