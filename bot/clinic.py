"""The memory clinic's values: what the bot hands the runner, what comes back, progress.

A member sends a ``torch.cuda.memory._dump_snapshot()`` file; the runner replays it under
other allocator settings in a sandboxed child (never in the bot process) and returns a
`ClinicResult`: a short table, the ``PYTORCH_CUDA_ALLOC_CONF`` line to copy, one PNG and a
JSON-able summary (the only part worth storing). Every refusal is a `UserFacingError` in
the member's locale that names what to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from bot.domain import Locale, UserRef
from bot.errors import UserFacingError
from bot.i18n import translator

log = logging.getLogger(__name__)

MiB = 1 << 20
GiB = 1 << 30
DEFAULT_MAX_MB = 100
GPU_MEMORY_GIB_RANGE = (1, 4096)


class ClinicStage(StrEnum):
    QUEUED = "queued"  # accepted, waiting for a runner slot
    READING = "reading"  # the child is reading and checking the file
    REPLAYING = "replaying"  # `done` of `total` configurations replayed
    DONE = "done"


@dataclass(frozen=True, slots=True)
class ClinicProgress:
    stage: ClinicStage
    done: int = 0
    total: int = 0


ProgressCallback = Callable[[ClinicProgress], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ClinicJob:
    """One snapshot to analyse.

    `snapshot` is a file path or the file's bytes. A path is deleted after the run when
    `delete_after` is set (a downloaded attachment); a member's own file (console) is not.
    `gpu_memory` (bytes) is the device to simulate; None: the snapshot's own estimate, else
    80 GiB.
    """

    snapshot: Path | bytes
    locale: Locale
    gpu_memory: int | None = None
    delete_after: bool = False
    name: str = "snapshot.pickle"  # shown in messages; never used as a path
    member: UserRef | None = None  # who sent it: one job in the clinic per member

    @classmethod
    def upload(
        cls,
        path: Path,
        locale: Locale,
        *,
        gpu_memory: int | None = None,
        name: str = "",
        member: UserRef | None = None,
    ) -> ClinicJob:
        """A downloaded attachment: the runner deletes `path` once the run is over."""
        return cls(path, locale, gpu_memory, True, name or path.name, member)

    @classmethod
    def local_file(
        cls,
        path: Path,
        locale: Locale,
        *,
        gpu_memory: int | None = None,
        member: UserRef | None = None,
    ) -> ClinicJob:
        """A file the member owns (console): read, never deleted."""
        return cls(path, locale, gpu_memory, False, path.name, member)

    def discard(self) -> None:
        """Delete the uploaded file (no-op for bytes and for a member's own file)."""
        if self.delete_after and isinstance(self.snapshot, Path):
            with contextlib.suppress(FileNotFoundError):
                self.snapshot.unlink()


@dataclass(frozen=True, slots=True)
class ClinicResult:
    """What the member gets, privately.

    `text` is the whole message body (markdown subset, at most 3,000 characters: a Slack
    section and a Discord embed both take it): the finding, the table, the line to copy,
    the caveats. `table` and `recommendation` are the same parts alone, for platforms that
    lay them out separately. `summary` holds the figures as plain JSON values.
    """

    title: str
    text: str
    table: str
    recommendation: str | None  # "PYTORCH_CUDA_ALLOC_CONF=..."; None when nothing helps
    png: bytes | None
    summary: Mapping[str, Any] = field(default_factory=dict)
    png_name: str = "memory-clinic.png"


class Rejection(StrEnum):
    """Why a snapshot was refused before any replay."""

    TOO_LARGE = "too_large"
    NOT_PICKLE = "not_pickle"
    TRUNCATED = "truncated"
    REFUSED = "refused"  # names a class or callable: nothing in it ran
    NO_HISTORY = "no_history"  # no device_traces, or no allocation in them
    NOT_SNAPSHOT = "not_snapshot"  # a pickle of something else
    TOO_BIG_IN_MEMORY = "too_big_in_memory"
    BAD_GPU_MEMORY = "bad_gpu_memory"
    REPEATED_ENTRIES = "repeated_entries"  # lists by reference more than the file holds
    TOO_MANY_DEVICES = "too_many_devices"  # more device traces than a machine has GPUs


class ClinicInputError(UserFacingError):
    """The file (or an option) cannot be analysed; the message says what to send instead."""

    def __init__(self, reason: Rejection, message: str) -> None:
        self.reason = reason
        super().__init__(message)


class ClinicUnavailableError(UserFacingError):
    """No runner: QUIZBOT_RUNNER=off."""


class ClinicFailedError(UserFacingError):
    """The analysis started but did not finish (timeout, crash, runner shut down)."""


class ClinicBusyError(UserFacingError):
    """Not taken: the member's previous snapshot is still in the clinic, or it is full."""


def rejection(reason: Rejection, locale: Locale, detail: Mapping[str, Any]) -> ClinicInputError:
    """The error for `reason`, worded for the member; `detail` fills the placeholders."""
    t = translator(locale)
    name = str(detail.get("name") or "snapshot.pickle")
    fix = t(
        'Send the file written by torch.cuda.memory._dump_snapshot("snapshot.pickle") '
        "after torch.cuda.memory._record_memory_history()."
    )
    if reason is Rejection.TOO_LARGE:
        text = t(
            "{name} is {size} MiB, over the clinic's limit of {limit} MiB "
            "(QUIZBOT_CLINIC_MAX_MB). Record fewer events "
            "(_record_memory_history(max_entries=...)) or without stack traces "
            "(context=None) and send it again.",
            name=name,
            size=_mib(detail.get("size")),
            limit=_mib(detail.get("limit")),
        )
    elif reason is Rejection.NOT_PICKLE:
        text = t("{name} is not a pickle file.", name=name) + " " + fix
    elif reason is Rejection.TRUNCATED:
        text = t(
            "{name} is cut short: the pickle ends early ({size} bytes arrived). Write it "
            "again with torch.cuda.memory._dump_snapshot() and send the whole file.",
            name=name,
            size=int(detail.get("size") or 0),
        )
    elif reason is Rejection.REFUSED:
        text = (
            t(
                "{name} was refused before anything in it ran: it names {what}, and a memory "
                "snapshot holds only plain data.",
                name=name,
                what=str(detail.get("what") or "?"),
            )
            + " "
            + fix
        )
    elif reason is Rejection.NO_HISTORY:
        text = t(
            "{name} was recorded without memory history: call "
            "torch.cuda.memory._record_memory_history() before the run, then "
            "_dump_snapshot().",
            name=name,
        )
    elif reason is Rejection.TOO_BIG_IN_MEMORY:
        text = t(
            "{name} needs more memory to read than the clinic may use ({limit} MiB). Record "
            "fewer events (max_entries) and send it again.",
            name=name,
            limit=_mib(detail.get("limit")),
        )
    elif reason is Rejection.REPEATED_ENTRIES:
        text = (
            t(
                "{name} lists {count} trace entries, more than a file of {size} MiB can "
                "hold ({limit} at most): it repeats the same entries by reference, which "
                "torch never writes. Nothing in it was replayed.",
                name=name,
                count=_grouped(detail.get("count"), locale),
                size=_mib(detail.get("size")),
                limit=_grouped(detail.get("limit"), locale),
            )
            + " "
            + fix
        )
    elif reason is Rejection.TOO_MANY_DEVICES:
        text = (
            t(
                "{name} has traces for {devices} devices: a snapshot has one per GPU of "
                "the recording process, and the clinic reads at most {limit}.",
                name=name,
                devices=_grouped(detail.get("devices"), locale),
                limit=int(detail.get("limit") or 0),
            )
            + " "
            + fix
        )
    elif reason is Rejection.BAD_GPU_MEMORY:
        text = t(
            "gpu_memory {value!r} is not a size in GiB between {low} and {high}, e.g. 80.",
            value=str(detail.get("value")),
            low=GPU_MEMORY_GIB_RANGE[0],
            high=GPU_MEMORY_GIB_RANGE[1],
        )
    else:
        text = (
            t(
                "{name} is not a torch memory snapshot ({problem}).",
                name=name,
                problem=str(detail.get("problem") or "?"),
            )
            + " "
            + fix
        )
    return ClinicInputError(reason, text)


def _grouped(value: object, locale: Locale) -> str:
    """A count with thousands grouped as the locale writes them (1,234 / 1.234)."""
    n = int(value) if isinstance(value, int | float) else 0
    text = f"{n:,}"
    return text.replace(",", ".") if locale is Locale.EL else text


def _mib(nbytes: object) -> str:
    value = float(nbytes) / MiB if isinstance(nbytes, int | float) else 0.0
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def check_snapshot_size(nbytes: int, limit: int, name: str, locale: Locale) -> None:
    """Refuse a file over the cap, before downloading or sending it anywhere."""
    if nbytes > limit:
        raise rejection(Rejection.TOO_LARGE, locale, {"name": name, "size": nbytes, "limit": limit})


def gpu_memory_from_gib(value: str | float, locale: Locale) -> int:
    """The ``gpu_memory`` option (GiB, e.g. ``80`` or ``141.5``) as bytes."""
    try:
        gib = float(value)
    except ValueError:
        gib = -1.0
    low, high = GPU_MEMORY_GIB_RANGE
    if not low <= gib <= high:  # also refuses nan
        raise rejection(Rejection.BAD_GPU_MEMORY, locale, {"value": value})
    return int(gib * GiB)


def clinic_off_error(locale: Locale) -> ClinicUnavailableError:
    t = translator(locale)
    return ClinicUnavailableError(
        t(
            "Demos and the memory clinic are off on this bot (QUIZBOT_RUNNER=off); an "
            "operator can set QUIZBOT_RUNNER=local or celery."
        )
    )


def clinic_failed_error(locale: Locale, *, timed_out: bool, error: str) -> ClinicFailedError:
    t = translator(locale)
    if timed_out:
        return ClinicFailedError(
            t(
                "The memory clinic stopped: {error}. Record fewer events "
                "(_record_memory_history(max_entries=...)) and send the snapshot again.",
                error=error,
            )
        )
    return ClinicFailedError(t("The memory clinic could not finish: {error}.", error=error))


class ProgressRelay:
    """Hands progress to an async callback one call at a time.

    While a call runs (a chat edit), newer updates replace the pending one, so a slow
    platform sees the latest state instead of a queue of stale ones. A failing callback is
    logged and never fails the analysis.
    """

    def __init__(self, deliver: ProgressCallback | None) -> None:
        self._deliver = deliver
        self._pending: ClinicProgress | None = None
        self._last: ClinicProgress | None = None
        self._task: asyncio.Task[None] | None = None

    def push(self, progress: ClinicProgress) -> None:
        """Queue `progress` (on the event loop's thread); returns at once."""
        if self._deliver is None or progress in (self._last, self._pending):
            return
        self._pending = progress
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        assert self._deliver is not None
        while self._pending is not None:
            progress, self._pending = self._pending, None
            try:
                await self._deliver(progress)
            except Exception:
                log.warning("clinic progress callback failed", exc_info=True)
            self._last = progress

    async def drain(self) -> None:
        """Wait until the latest pushed progress has been delivered."""
        if self._task is not None:
            await asyncio.shield(self._task)


__all__ = [
    "ClinicBusyError",
    "ClinicFailedError",
    "ClinicInputError",
    "ClinicJob",
    "ClinicProgress",
    "ClinicResult",
    "ClinicStage",
    "ClinicUnavailableError",
    "ProgressCallback",
    "ProgressRelay",
    "Rejection",
    "check_snapshot_size",
    "clinic_failed_error",
    "clinic_off_error",
    "gpu_memory_from_gib",
    "rejection",
]
