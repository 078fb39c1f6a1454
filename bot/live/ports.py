"""Live rounds' values, the scoring rule and the storage they need (`storage.live`).

Scoring: a correct answer earns 1,000 points when given the moment the question appears,
falling linearly to 500 at its closing time (`live_points`); a wrong answer earns 0. The
round's standings rank by points, then correct answers, then the time taken by them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from bot.domain import ChannelRef, Locale, MessageRef, Post, PostDraft, UserRef

MAX_POINTS = 1000
MIN_POINTS = 500  # a correct answer at the last moment


class RoundState(StrEnum):
    LOBBY = "lobby"  # waiting for players (step 0)
    RUNNING = "running"  # its questions, one after another
    ENDING = "ending"  # ended, the podium not yet posted (the channel is free)
    FINISHED = "finished"
    CANCELLED = "cancelled"


ACTIVE = (RoundState.LOBBY, RoundState.RUNNING)


class EndNote(StrEnum):
    COMPLETE = ""  # every question was played
    STOPPED = "stopped"  # `/quiz live stop`
    CANCELLED = "cancelled"  # in the lobby


@dataclass(frozen=True, slots=True)
class LiveRound:
    """A round and where it is. `step`: 0 the lobby; 2k+1 question k open; 2k+2 question k
    closed (the next question or the end is due)."""

    id: int
    channel: ChannelRef
    state: RoundState
    questions: int
    seconds: int
    topic: str | None
    counted: bool
    locale: Locale
    started_by: str
    created_at: datetime
    step: int
    next_at: datetime
    stop_requested: bool = False
    lobby_message: MessageRef | None = None
    ended_at: datetime | None = None
    end_note: EndNote = EndNote.COMPLETE

    @property
    def current(self) -> int:
        """The question the step is about (0-based; -1 in the lobby)."""
        return (self.step - 1) // 2 if self.step > 0 else -1


@dataclass(frozen=True, slots=True)
class LiveQuestion:
    round_id: int
    k: int
    post: Post
    opened_at: datetime | None
    results_at: datetime | None


@dataclass(frozen=True, slots=True)
class LiveAnswer:
    """One answer of a round's question, with what its points are computed from."""

    k: int
    user: UserRef
    choice: int
    correct: bool
    answered_at: datetime
    opened_at: datetime
    closes_at: datetime

    @property
    def seconds(self) -> float:
        return max(0.0, (self.answered_at - self.opened_at).total_seconds())

    @property
    def points(self) -> int:
        return live_points(self.correct, self.answered_at, self.opened_at, self.closes_at)


def live_points(
    correct: bool, answered_at: datetime, opened_at: datetime, closes_at: datetime
) -> int:
    """1,000 at the question's start, falling linearly to 500 at its close; wrong: 0."""
    if not correct:
        return 0
    span = (closes_at - opened_at).total_seconds()
    used = (answered_at - opened_at).total_seconds()
    share = min(1.0, max(0.0, used / span)) if span > 0 else 1.0
    return round(MAX_POINTS - (MAX_POINTS - MIN_POINTS) * share)


@dataclass(frozen=True, slots=True)
class Standing:
    rank: int
    user: UserRef
    points: int
    correct: int
    answered: int
    correct_seconds: float  # the time taken by the correct answers (the tie-break)


def standings(answers: Sequence[LiveAnswer], players: Sequence[UserRef] = ()) -> list[Standing]:
    """The round's standings: points, then correct answers, then less time; equal points
    and correct answers share a rank. Players who joined and never answered are last."""
    tally: dict[str, list[float]] = {}
    users: dict[str, UserRef] = {}
    for a in answers:
        row = tally.setdefault(a.user.key, [0, 0, 0, 0.0])
        users[a.user.key] = a.user
        row[0] += a.points
        row[1] += int(a.correct)
        row[2] += 1
        row[3] += a.seconds if a.correct else 0.0
    for p in players:
        users.setdefault(p.key, p)
        tally.setdefault(p.key, [0, 0, 0, 0.0])
    order = sorted(tally, key=lambda k: (-tally[k][0], -tally[k][1], tally[k][3], users[k].key))
    out: list[Standing] = []
    for i, key in enumerate(order):
        points, correct, answered, secs = tally[key]
        rank = i + 1
        if out and out[-1].points == points and out[-1].correct == correct:
            rank = out[-1].rank
        out.append(Standing(rank, users[key], int(points), int(correct), int(answered), secs))
    return out


@dataclass(frozen=True, slots=True)
class BoardRow:
    """A row of the live board (every finished round of the channel)."""

    rank: int
    user: UserRef
    points: int
    correct: int
    answered: int
    rounds: int


class LiveRepository(Protocol):
    async def start(
        self,
        channel: ChannelRef,
        *,
        questions: int,
        seconds: int,
        topic: str | None,
        counted: bool,
        locale: Locale,
        started_by: str,
        now: datetime,
        starts_at: datetime,
    ) -> LiveRound | None:
        """A new round in its lobby; None when the channel has one in its lobby or running
        (the unique active channel decides, across replicas)."""
        ...

    async def get(self, round_id: int) -> LiveRound | None: ...

    async def active(self, channel: ChannelRef) -> LiveRound | None:
        """The channel's round in its lobby or running."""
        ...

    async def set_lobby_message(self, round_id: int, message: MessageRef) -> None: ...

    async def due(
        self, now: datetime, stale_before: datetime, platforms: Collection[str], limit: int = 50
    ) -> list[LiveRound]:
        """Rounds whose step is due (`next_at` passed) and not leased since `stale_before`."""
        ...

    async def claim(self, round_id: int, step: int, now: datetime, stale_before: datetime) -> bool:
        """Take the lease of the round's current `step` (it must be due and its lease free
        or older than `stale_before`); one caller per lease period wins."""
        ...

    async def renew(self, round_id: int, step: int, held: datetime, now: datetime) -> bool:
        """Move the lease of `step` taken (or last renewed) at `held` to `now`: its owner is
        still at work (a platform call waiting out a 429). False when it is not held so."""
        ...

    async def advance(
        self, round_id: int, step: int, next_at: datetime, state: RoundState | None = None
    ) -> bool:
        """Move from `step` to the next one (due at `next_at`), releasing the lease."""
        ...

    async def hurry(self, round_id: int, now: datetime, *, stop: bool) -> LiveRound | None:
        """Make the current step due now (start now; with `stop`, end after it)."""
        ...

    async def cancel(self, round_id: int, now: datetime) -> bool:
        """End a round still in its lobby (nothing was asked)."""
        ...

    async def claim_question(
        self, round_id: int, k: int, draft: PostDraft, *, counted: bool
    ) -> LiveQuestion:
        """Question k's post (state claimed, of kind live, or live counted when `counted`)
        and its row, created together; an existing one (an earlier attempt at this step)
        is returned as it is."""
        ...

    async def question(self, round_id: int, k: int) -> LiveQuestion | None: ...

    async def questions(self, round_id: int) -> list[LiveQuestion]: ...

    async def by_post(self, post_id: int) -> LiveQuestion | None:
        """The live question a post is (None: not a live round's)."""
        ...

    async def mark_opened(
        self, round_id: int, k: int, message: MessageRef, opened_at: datetime, closes_at: datetime
    ) -> LiveQuestion:
        """Question k is on the platform: its post opens (taking answers until `closes_at`)."""
        ...

    async def mark_results(self, round_id: int, k: int, at: datetime) -> bool: ...

    async def answers(self, round_id: int) -> list[LiveAnswer]:
        """Every answer to the round's questions, in time order."""
        ...

    async def join(self, round_id: int, user: UserRef, at: datetime) -> bool:
        """False when `user` had joined already."""
        ...

    async def players(self, round_id: int) -> list[UserRef]: ...

    async def finish(
        self, round_id: int, step: int, now: datetime, note: EndNote, table: Sequence[Standing]
    ) -> bool:
        """End a running round at `step` (state ending, the channel free) and fold `table`
        into the live board, in one transaction: once, whoever calls it."""
        ...

    async def mark_podium(self, round_id: int, at: datetime) -> bool: ...

    async def board(self, channel: ChannelRef, limit: int = 10) -> list[BoardRow]: ...

    async def player(self, channel: ChannelRef, user: UserRef) -> BoardRow | None:
        """The member's row of the live board (rank 0: not computed)."""
        ...

    async def players_of(
        self, channel: ChannelRef, users: Sequence[UserRef]
    ) -> dict[str, BoardRow]:
        """`player` of many members of the channel's workspace, by member key (none: absent)."""
        ...

    async def busy(self, channels: Collection[ChannelRef]) -> set[ChannelRef]:
        """Those of `channels` with a round in its lobby or running."""
        ...

    async def next_due(self, platforms: Collection[str]) -> datetime | None:
        """The earliest `next_at` of a round not finished (stepping a fake clock)."""
        ...


__all__ = [
    "ACTIVE",
    "MAX_POINTS",
    "MIN_POINTS",
    "BoardRow",
    "EndNote",
    "LiveAnswer",
    "LiveQuestion",
    "LiveRepository",
    "LiveRound",
    "RoundState",
    "Standing",
    "live_points",
    "standings",
]
