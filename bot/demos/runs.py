"""Demo runs as the core sees them, and the ports the dispatcher drives: where runs are
recorded (`DemoRunRepository`), which demos exist (`DemoCatalog`) and what a runner may
report beyond `DemoRunner` (`TrackingRunner`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from bot.domain import ChannelRef, DemoResult, DemoState, Locale, MessageRef, Post

FINISHED = frozenset({DemoState.SUCCEEDED, DemoState.FAILED, DemoState.TIMED_OUT})


@dataclass(frozen=True, slots=True)
class DemoRun:
    id: int
    channel: ChannelRef
    demo: str
    locale: Locale
    state: DemoState
    created_at: datetime
    params: Mapping[str, Any] = field(default_factory=dict)
    post_id: int | None = None
    parent: MessageRef | None = None  # the question's message; None for `/quiz demo`
    status_message: MessageRef | None = None
    device: str = ""
    report: str = ""
    metrics: Mapping[str, Any] = field(default_factory=dict)
    error: str = ""
    started_at: datetime | None = None
    finished_at: datetime | None = None
    posted_at: datetime | None = None

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    @property
    def thread(self) -> MessageRef | None:
        """Where the image goes: the question's thread, or the status line's own thread."""
        return self.parent or self.status_message


class DemoRunRepository(Protocol):
    async def create(
        self,
        channel: ChannelRef,
        demo: str,
        locale: Locale,
        params: Mapping[str, Any],
        created_at: datetime,
        *,
        post_id: int | None = None,
        parent: MessageRef | None = None,
    ) -> DemoRun:
        """A new run in state QUEUED."""
        ...

    async def create_for_post(
        self, post: Post, demo: str, locale: Locale, params: Mapping[str, Any], created_at: datetime
    ) -> tuple[DemoRun, bool]:
        """The question's one run of `demo`, in its channel under its message (which it
        has): created (True) or the existing one (False), also when two replicas ask at
        once."""
        ...

    async def get(self, run_id: int) -> DemoRun | None: ...

    async def for_post(self, post_id: int) -> list[DemoRun]: ...

    async def in_channel(self, channel: ChannelRef, limit: int = 20) -> list[DemoRun]:
        """The channel's latest runs, newest first."""
        ...

    async def set_status_message(self, run_id: int, message: MessageRef) -> None: ...

    async def mark_running(self, run_id: int, device: str, at: datetime) -> bool:
        """QUEUED -> RUNNING (conditional); False if the run was not queued."""
        ...

    async def requeue(self, run_id: int) -> bool:
        """RUNNING -> QUEUED, for a run whose runner forgot it (a restart)."""
        ...

    async def finish(self, run_id: int, result: DemoResult, at: datetime) -> bool:
        """QUEUED/RUNNING -> the result's state (conditional); False if already finished."""
        ...

    async def claim_posting(self, run_id: int, at: datetime) -> bool:
        """Set ``posted_at`` if it is unset: True for exactly one caller."""
        ...

    async def release_posting(self, run_id: int) -> None:
        """Undo a claim whose posting failed, so a later attempt can post."""
        ...

    async def unfinished(self, limit: int = 100) -> list[DemoRun]:
        """Runs queued or running, and finished runs not posted yet; oldest first."""
        ...


class DemoCatalog(Protocol):
    """The registered demos as the bot sees them (the runner's registry satisfies it)."""

    def ids(self) -> list[str]: ...

    def check(self, demo: str, params: Mapping[str, object]) -> Mapping[str, Any]:
        """The full parameter set, or a `UserFacingError` naming the fix."""
        ...


@runtime_checkable
class TrackingRunner(Protocol):
    """What a runner may add to `DemoRunner`: progress, and memory across restarts."""

    async def started(self, run_id: int, timeout: float) -> str | None:
        """The device line once the demo code starts; None on timeout or unknown run."""
        ...

    async def knows(self, run_id: int) -> bool:
        """Whether this runner can still deliver the run's result (else: submit again)."""
        ...
