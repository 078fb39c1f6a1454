"""What the dashboard's pages read: values and the repository port (`storage/dashboard.py`).

Every figure comes from an aggregate kept by the close (`score_day_totals`,
`score_questions`, the boards' histograms, `scores`), never from a scan of the answers;
the member's own answer history is an index range on their answers. Every method takes
the workspace (or a channel, which names it) and reads nothing outside it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Protocol

from bot.domain import ChannelRef, PostKind, Question, Schedule, UserRef
from bot.team import Workspace


@dataclass(frozen=True, slots=True)
class Activity:
    """One day or week of a channel or workspace: answers, correct answers, players."""

    starts: date
    answered: int
    correct: int
    players: int


@dataclass(frozen=True, slots=True)
class QuestionStats:
    question_id: str
    topic: str
    asked: int
    answered: int
    correct: int

    @property
    def rate(self) -> float:
        return self.correct / self.answered if self.answered else 0.0


@dataclass(frozen=True, slots=True)
class Streak:
    user: UserRef
    channel: ChannelRef
    current: int
    best: int


Ranges = Callable[[str], tuple[tuple[date, date], tuple[date, date]]]
"""The overview's periods in a time zone: (first, last) day, and (first, last) Monday."""


@dataclass(frozen=True, slots=True)
class Overview:
    """What the team overview shows, read in one go (one session, the workspace's
    channels looked up once); `zone`: the time zone its days are in, `periods` what
    `Ranges` gave for it."""

    zone: str
    periods: tuple[tuple[date, date], tuple[date, date]]
    days: list[Activity]
    weeks: list[Activity]
    questions: list[QuestionStats]
    streaks: list[Streak]
    schedules: list[tuple[Schedule, str]]


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One answer of the member, with the question as it was shown."""

    answer_id: int
    answered_at: datetime
    channel: ChannelRef
    kind: PostKind
    question: Question
    choice: int
    correct: bool
    value: float | None


@dataclass(frozen=True, slots=True)
class WebClinicJob:
    """A snapshot sent from the dashboard: progress, then the result (its uploader's)."""

    id: int
    member: UserRef
    name: str
    done: bool
    status: str
    title: str
    body: str
    png: bytes | None
    created_at: datetime


class DashboardRepository(Protocol):
    async def channels(self, workspace: Workspace) -> list[ChannelRef]:
        """The workspace's channels (by id); empty: the workspace is unknown here."""
        ...

    async def overview(
        self,
        workspace: Workspace,
        channel: ChannelRef | None,
        ranges: Ranges,
        streaks: int = 10,
    ) -> Overview:
        """The channel's (None: the workspace's) overview, in the channel's time zone
        (the workspace's: its first channel's, by name, as a workspace board is read in
        the caller's channel's): activity per local day and per ISO week in `ranges(zone)`
        (periods without answers left out;
        players: the day or week board's, so a member who played in two channels is one
        workspace player); each question asked, summed over the channels; the longest
        current streaks; the enabled schedules, each with its channel's time zone."""
        ...

    async def history(
        self, member: UserRef, limit: int = 20, before: int | None = None
    ) -> list[HistoryEntry]:
        """The member's answers, newest first (`before`: an answer id, for the next page)."""
        ...

    async def clinic_start(self, member: UserRef, name: str, now: datetime) -> int: ...

    async def clinic_status(self, job: int, status: str, now: datetime) -> None: ...

    async def clinic_finish(
        self, job: int, title: str, body: str, png: bytes | None, now: datetime
    ) -> None: ...

    async def clinic_job(self, member: UserRef, job: int) -> WebClinicJob | None:
        """The job, if `member` sent it (anyone else: None)."""
        ...

    async def clinic_jobs(self, member: UserRef, limit: int = 10) -> Sequence[WebClinicJob]: ...

    async def clinic_purge(self, older_than: datetime) -> int: ...

    async def forget_clinic(self, member: UserRef) -> None:
        """Delete the member's uploads' results (forget-me)."""
        ...


__all__ = [
    "Activity",
    "DashboardRepository",
    "HistoryEntry",
    "Overview",
    "QuestionStats",
    "Ranges",
    "Streak",
    "WebClinicJob",
]
