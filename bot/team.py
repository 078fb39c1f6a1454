"""Team questions: a workspace's own pack (submitted in chat or imported, reviewed by its
admins), the flags members raise on questions, and the ports that store and check them.

A workspace is a Slack team, a Discord guild or the console (``console:console``). Its
team pack is validated by the bank's validator (team rules: one locale is enough,
references optional) behind `QuestionChecker`, and versioned like the bank: a team
question's id comes from its content (`team_question_id`), posts keep the content hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from bot.bank import content_hash, question_from_dict, question_to_dict
from bot.domain import ChannelRef, MessageRef, Platform, Post, Question, UserRef
from bot.errors import UserFacingError

TEAM = "team"  # `/quiz ask team`
TEAM_PREFIX = "team-"


@dataclass(frozen=True, slots=True)
class Workspace:
    """Where a team pack lives: a platform's workspace (team, guild; ``console``)."""

    platform: Platform
    id: str

    @classmethod
    def of(cls, ref: ChannelRef | UserRef) -> Workspace:
        return cls(ref.platform, ref.workspace)

    @property
    def key(self) -> str:
        return f"{self.platform}:{self.id}"

    @classmethod
    def parse(cls, text: str) -> Workspace:
        """``slack:T0123``, ``discord:<guild id>`` or ``console``."""
        platform, _, ident = text.strip().partition(":")
        if platform == Platform.CONSOLE and not ident:
            ident = Platform.CONSOLE.value
        try:
            parsed = Platform(platform)
        except ValueError:
            parsed = None
        if parsed is None or not ident:
            raise UserFacingError(
                f"{text[:60]!r} is not a workspace: write the platform and its id, e.g. "
                "slack:T0123ABCD, discord:<guild id>, or console"
            )
        return cls(parsed, ident)


class SubmissionState(StrEnum):
    PENDING = "pending"  # waiting for an admin
    APPROVED = "approved"  # in the team pack
    REJECTED = "rejected"


class Origin(StrEnum):
    CHAT = "chat"  # `/quiz submit`
    IMPORT = "import"  # a file (`quizbot questions import`, a file sent to the bot)


@dataclass(frozen=True, slots=True)
class TeamQuestion:
    """A team question as submitted, with its review."""

    id: int  # the submission's own number (review buttons carry it)
    workspace: Workspace
    question: Question
    state: SubmissionState
    origin: Origin
    created_at: datetime
    author: UserRef | None = None  # None: imported, or the author asked to be forgotten
    channel: ChannelRef | None = None  # where it was submitted (the author is told there)
    decided_at: datetime | None = None
    decided_by: UserRef | None = None
    reason: str = ""  # why it was rejected
    review_message: MessageRef | None = None  # its card in the review channel


class FlagReason(StrEnum):
    WRONG_ANSWER = "wrong-answer"
    AMBIGUOUS = "ambiguous"
    TYPO = "typo"
    OUTDATED = "outdated"


@dataclass(frozen=True, slots=True)
class FlaggedQuestion:
    """A question members reported, with the count per reason (one workspace)."""

    question_id: str
    question_hash: str  # the latest version reported
    reasons: Mapping[FlagReason, int]
    latest_note: str = ""
    retired: bool = False

    @property
    def count(self) -> int:
        return sum(self.reasons.values())


@dataclass(frozen=True, slots=True)
class PackState:
    """What a workspace's picks need: its approved team questions and the question ids
    its admins retired, at a revision (bumped by every change, so replicas reload)."""

    revision: int
    approved: tuple[Question, ...] = ()
    retired: frozenset[str] = field(default_factory=frozenset)


class TeamPackRepository(Protocol):
    async def add(
        self,
        workspace: Workspace,
        questions: Sequence[Question],
        *,
        origin: Origin,
        approved: bool,
        now: datetime,
        author: UserRef | None = None,
        channel: ChannelRef | None = None,
    ) -> list[TeamQuestion]:
        """Store questions not already in the workspace's pack (same content hash, any
        state: importing twice adds nothing), in one transaction; returns those added."""
        ...

    async def find(self, workspace: Workspace, content_hash: str) -> TeamQuestion | None: ...

    async def get(self, submission_id: int) -> TeamQuestion | None: ...

    async def listing(
        self, workspace: Workspace, state: SubmissionState | None = None, limit: int | None = None
    ) -> list[TeamQuestion]:
        """The workspace's team questions (oldest first), optionally of one state."""
        ...

    async def decide(
        self,
        submission_id: int,
        workspace: Workspace,
        state: SubmissionState,
        by: UserRef,
        now: datetime,
        reason: str = "",
    ) -> tuple[bool, TeamQuestion | None]:
        """Approve or reject a pending question: a conditional update, so of two admins
        deciding at once exactly one wins (True); the question as it is now either way."""
        ...

    async def set_review_message(self, submission_id: int, ref: MessageRef) -> None: ...

    async def state(self, workspace: Workspace, known: int | None = None) -> PackState:
        """The pack's state; only the revision (one lookup) when it is still `known`."""
        ...

    async def retire(
        self, workspace: Workspace, question_id: str, by: UserRef | None, now: datetime
    ) -> bool:
        """Never pick `question_id` again in the workspace; False when it already was."""
        ...

    async def restore(self, workspace: Workspace, question_id: str) -> bool: ...

    async def review_channel(self, workspace: Workspace) -> ChannelRef | None: ...

    async def set_review_channel(self, channel: ChannelRef) -> None: ...

    async def flag(
        self,
        post: Post,
        question: Question,
        user: UserRef,
        reason: FlagReason,
        note: str,
        now: datetime,
    ) -> bool:
        """Record a member's report on a post's question; False when they already did."""
        ...

    async def flagged(self, workspace: Workspace, limit: int = 10) -> list[FlaggedQuestion]:
        """Reported questions, most reported first."""
        ...


class QuestionChecker(Protocol):
    """The bank's validator with the team rules (`questions.team`)."""

    def check(self, data: Mapping[str, Any]) -> tuple[list[str], Question | None]:
        """The problems of a question given as bank-file data, worded as the bank
        validator words them (each ``<field>: <problem>; <fix>``); else the question, with
        its team id."""
        ...


@dataclass(frozen=True, slots=True)
class ReadQuestions:
    """What a question file holds: the valid questions, and one line per invalid entry
    (where it is — line, index or file — what is wrong and the fix)."""

    questions: tuple[Question, ...]
    problems: tuple[str, ...]
    entries: int  # rows, results or files read


class QuestionFileReader(Protocol):
    """Reads question files (bank YAML, CSV, Open Trivia DB JSON) (`questions.transfer`)."""

    def accepts(self, name: str) -> bool:
        """Whether `name` looks like a question file it reads (by its extension)."""
        ...

    def read(self, name: str, data: bytes) -> ReadQuestions:
        """Parse and validate a file's bytes; raises `UserFacingError` when the whole file
        is refused (too large, not the format, an Open Trivia DB error code)."""
        ...

    def write_csv(self, questions: Iterable[Question]) -> tuple[str, list[str]]:
        """The questions as the CSV `read` reads back, and a note per question CSV cannot
        hold whole (a second locale, a demo, inputs)."""
        ...


def team_question(data: Mapping[str, Any]) -> Question:
    """A validated question under its team id: ``team-`` and a digest of everything but
    the id, so the same content gets the same id in every workspace and every import."""
    plain = question_to_dict(question_from_dict(dict(data)))
    plain["id"] = team_question_id(plain)
    return question_from_dict(plain)


def team_question_id(data: Mapping[str, Any]) -> str:
    return TEAM_PREFIX + content_hash({k: v for k, v in data.items() if k != "id"})[:12]


def member_digest(user: UserRef) -> str:
    """A short digest of a member (a forget-me button carries it, not the user id)."""
    return hashlib.sha256(user.key.encode()).hexdigest()[:16]


__all__ = [
    "TEAM",
    "FlagReason",
    "FlaggedQuestion",
    "Origin",
    "PackState",
    "QuestionChecker",
    "QuestionFileReader",
    "ReadQuestions",
    "SubmissionState",
    "TeamPackRepository",
    "TeamQuestion",
    "Workspace",
    "member_digest",
    "team_question",
    "team_question_id",
]
