"""Domain values of the quiz core.

Everything here is a frozen value. Platform identifiers arrive as opaque strings inside
the small reference types (`ChannelRef`, `UserRef`, `MessageRef`): the core never parses
a Slack ``ts`` or a Discord snowflake.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from enum import StrEnum
from typing import Any


class Platform(StrEnum):
    CONSOLE = "console"
    SLACK = "slack"
    DISCORD = "discord"


class Locale(StrEnum):
    EN = "en"
    EL = "el"

    @classmethod
    def parse(cls, value: str) -> Locale | None:
        """Map a platform locale tag (``el``, ``el-GR``, ``en-US``) to a supported locale."""
        tag = value.strip().lower().replace("_", "-").split("-", 1)[0]
        try:
            return cls(tag)
        except ValueError:
            return None

    @classmethod
    def accepted(cls, header: str) -> Locale | None:
        """The first supported locale of an ``Accept-Language`` header (in its order)."""
        for tag in header.split(","):
            found = cls.parse(tag.split(";")[0])
            if found is not None:
                return found
        return None


class PostKind(StrEnum):
    SCHEDULED = "scheduled"  # fired by a channel schedule
    ASK = "ask"  # on demand, in the channel
    PRACTICE = "practice"  # private, never scores
    # A question of a live round (`bot.live`): its points go to the round and the live
    # board only; LIVE_COUNTED also to the daily boards, as an asked question (`count`).
    LIVE = "live"
    LIVE_COUNTED = "live-counted"

    @property
    def live(self) -> bool:
        return self in (PostKind.LIVE, PostKind.LIVE_COUNTED)


class PostState(StrEnum):
    CLAIMED = "claimed"  # row exists, platform message not yet stored
    OPEN = "open"  # posted, taking answers
    CLOSED = "closed"  # revealed; no answer is accepted any more


class AnswerStatus(StrEnum):
    RECORDED = "recorded"
    ALREADY_ANSWERED = "already_answered"
    CLOSED = "closed"
    UNKNOWN_POST = "unknown_post"
    INVALID_CHOICE = "invalid_choice"
    WRONG_CHANNEL = "wrong_channel"  # the click names a post of another channel
    ERASED = "erased"  # received before the member's forget-me completed: not kept


class DemoPolicy(StrEnum):
    AUTO = "auto"  # run the demo on reveal
    BUTTON = "button"  # offer a button in the reveal
    OFF = "off"


class DemoState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"


LETTERS = string.ascii_uppercase


def choice_letter(index: int) -> str:
    """``0 -> 'A'``: choices are shown as a lettered list; buttons carry the letter."""
    return LETTERS[index]


@dataclass(frozen=True, slots=True)
class ChannelRef:
    platform: Platform
    workspace: str
    channel: str

    @property
    def key(self) -> str:
        return f"{self.platform}:{self.workspace}:{self.channel}"


@dataclass(frozen=True, slots=True)
class UserRef:
    platform: Platform
    workspace: str
    user: str
    name: str = field(default="", compare=False)

    @property
    def key(self) -> str:
        return f"{self.platform}:{self.workspace}:{self.user}"

    @property
    def display(self) -> str:
        return self.name or self.user


@dataclass(frozen=True, slots=True)
class MessageRef:
    """A message posted on a platform; ``message`` is the platform's own id (opaque)."""

    channel: ChannelRef
    message: str


@dataclass(frozen=True, slots=True)
class QuestionText:
    """One locale's wording of a question."""

    prompt: str
    choices: tuple[str, ...]
    explanation: str


@dataclass(frozen=True, slots=True)
class Choice:
    index: int
    text: str

    @property
    def letter(self) -> str:
        return choice_letter(self.index)


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    topic: str
    difficulty: int
    answer: int  # 0-based index of the correct choice
    texts: Mapping[Locale, QuestionText]
    content_hash: str
    demo: str | None = None
    references: tuple[str, ...] = ()
    inputs: Mapping[str, Any] = field(default_factory=dict)

    def text(self, locale: Locale) -> QuestionText:
        """The wording in `locale`; else English; else the only locale it has (a team
        question may be written in one language: it is shown in that one)."""
        found = self.texts.get(locale) or self.texts.get(Locale.EN)
        return found if found is not None else next(iter(self.texts.values()))

    @property
    def locales(self) -> tuple[Locale, ...]:
        return tuple(loc for loc in Locale if loc in self.texts)

    def choices(self, locale: Locale) -> tuple[Choice, ...]:
        return tuple(Choice(i, t) for i, t in enumerate(self.text(locale).choices))

    @property
    def choice_count(self) -> int:
        return len(self.text(Locale.EN).choices)


DEFAULT_GENERATED_SHARE = 25


@dataclass(frozen=True, slots=True)
class ChannelSettings:
    channel: ChannelRef
    locale: Locale = Locale.EN
    timezone: str = "UTC"
    demo_policy: DemoPolicy = DemoPolicy.AUTO
    generated_share: int = DEFAULT_GENERATED_SHARE  # percent of picks that are generated
    builtin_pack: bool = True  # the questions shipped with the bot (`/quiz packs`)
    team_pack: bool = True  # the workspace's approved team questions
    # The workspace's team pack revision, read with the settings (None: not read): a pick
    # then needs no query of its own to know whether its cached pack is current.
    pack_revision: int | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Post:
    id: int
    channel: ChannelRef
    question_id: str
    question_hash: str
    kind: PostKind
    state: PostState
    locale: Locale
    created_at: datetime
    closes_at: datetime | None
    message: MessageRef | None = None
    answer_count: int = 0
    schedule_id: int | None = None
    slot_at: datetime | None = None
    practice_user: UserRef | None = None
    closed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class PostDraft:
    """What a new post is stored with: its channel, the question version it shows (with
    the right choice and the number of choices, kept for scoring), its locale, when it is
    made and when it closes (None: only its answer closes it)."""

    channel: ChannelRef
    question_id: str
    question_hash: str
    correct_choice: int
    choice_count: int
    locale: Locale
    created_at: datetime
    closes_at: datetime | None

    @classmethod
    def of(
        cls,
        channel: ChannelRef,
        question: Question,
        locale: Locale,
        created_at: datetime,
        closes_at: datetime | None,
    ) -> PostDraft:
        return cls(
            channel,
            question.id,
            question.content_hash,
            question.answer,
            question.choice_count,
            locale,
            created_at,
            closes_at,
        )


@dataclass(frozen=True, slots=True)
class Answer:
    post_id: int
    user: UserRef
    choice: int
    correct: bool
    answered_at: datetime


@dataclass(frozen=True, slots=True)
class AnswerOutcome:
    """What happened to one click, with what the clicking user is told privately."""

    status: AnswerStatus
    post: Post | None = None
    question: Question | None = None
    choice: int | None = None  # the choice that counts (the first one, on a repeat click)
    correct: bool | None = None
    answer_count: int = 0
    value: float | None = None  # a typed answer (the first one, on a repeat)


@dataclass(frozen=True, slots=True)
class Reveal:
    post: Post
    question: Question
    distribution: tuple[int, ...]  # answers per choice
    first_correct: UserRef | None
    leader: LeaderboardRow | None = None
    guesses: tuple[float, ...] = ()  # typed answers ("predict the number"), in order

    @property
    def total(self) -> int:
        return sum(self.distribution)

    @property
    def correct_count(self) -> int:
        return self.distribution[self.question.answer] if self.distribution else 0


class BoardWindow(StrEnum):
    """The span a board covers, in the channel's time zone (ISO weeks start on Monday)."""

    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    ALL = "all"


class BoardScope(StrEnum):
    CHANNEL = "channel"
    WORKSPACE = "workspace"  # every channel of the platform workspace


@dataclass(frozen=True, slots=True)
class BoardPeriod:
    """The local dates of a board window: ``first``..``last`` inclusive; None for all-time."""

    window: BoardWindow
    first: date | None = None
    last: date | None = None


@dataclass(frozen=True, slots=True)
class LeaderboardRow:
    rank: int
    user: UserRef
    points: int
    correct: int
    answered: int


@dataclass(frozen=True, slots=True)
class Leaderboard:
    rows: tuple[LeaderboardRow, ...]
    players: int
    caller: LeaderboardRow | None = None
    window: BoardWindow = BoardWindow.ALL
    scope: BoardScope = BoardScope.CHANNEL
    first_day: date | None = None  # the window's local dates (None for all-time)
    last_day: date | None = None


class _Accuracy:
    """`accuracy` of a value with `answered` and `correct` counts."""

    __slots__ = ()
    answered: int
    correct: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.answered if self.answered else 0.0


@dataclass(frozen=True, slots=True)
class TopicStats(_Accuracy):
    topic: str
    answered: int
    correct: int


@dataclass(frozen=True, slots=True)
class PlayerStats(_Accuracy):
    """One member's all-time results in one channel (channel questions; practice is apart)."""

    user: UserRef
    points: int
    answered: int
    correct: int
    current_streak: int
    best_streak: int
    topics: tuple[TopicStats, ...] = ()


@dataclass(frozen=True, slots=True)
class Schedule:
    id: int
    channel: ChannelRef
    timezone: str
    local_time: str | None  # "09:30"; None when `cron` is set
    weekdays: str | None  # "mon-fri"
    cron: str | None
    window_seconds: int | None  # None: until the next slot, at most 24 h
    demo_policy: DemoPolicy
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class DemoJob:
    run_id: int
    demo: str
    locale: Locale
    params: Mapping[str, Any] = field(default_factory=dict)
    simulate: bool = False


@dataclass(frozen=True, slots=True)
class DemoResult:
    run_id: int
    demo: str
    state: DemoState
    device: str  # "NVIDIA H200 · torch 2.x · CUDA 13" or "simulated allocator (torch 2.13 rules)"
    report: str = ""
    metrics: Mapping[str, Any] = field(default_factory=dict)
    png: bytes | None = None
    error: str = ""


@dataclass(frozen=True, slots=True)
class Delivery:
    """A platform request acknowledged but not (yet) marked handled: replayed after a crash."""

    key: str
    platform: str
    received_at: datetime
    attempts: int
    payload: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class NumericTarget:
    """What a typed answer must hit: `value` within `tolerance`, in `unit`."""

    value: float
    tolerance: float
    unit: str

    def accepts(self, typed: float) -> bool:
        # A hair of slack: stored values are rounded to 6 decimals, typed ones are decimal.
        return abs(typed - self.value) <= self.tolerance + 1e-6
