"""The memory clinic in chat: a member's snapshot in, a private report out.

Every platform hands the core a `ClinicJob` (a downloaded attachment, a file in a direct
message, a console path) and a `ClinicDelivery` (where the member's private status line
and result go); `examine` does the rest: it says at once that the file is being analysed,
edits that line as the runner reports progress (queued → reading → replaying n/m → done),
and delivers the table, the line to copy and the plot — or one clear line saying what to
fix. The analysis runs on the runner (never in the bot); nothing but the summary is kept.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from pathlib import Path

from bot.boundary import failure_message
from bot.clinic import (
    GPU_MEMORY_GIB_RANGE,
    ClinicBusyError,
    ClinicJob,
    ClinicProgress,
    ClinicStage,
    ProgressCallback,
    check_snapshot_size,
    clinic_off_error,
    gpu_memory_from_gib,
)
from bot.commands import Command, CommandOption, Invocation, OptionKind, Reply
from bot.domain import Locale, Platform, UserRef
from bot.errors import UserFacingError
from bot.features import Feature, Parts
from bot.i18n import N_, translator
from bot.intake import FileRoute, FileWork, PrivateReply, SentFile
from bot.logs import ThrottledLog, problem_key
from bot.messages import Image, Message
from bot.ports import ClinicRunner
from bot.quiz import QuizService

log = logging.getLogger(__name__)

HOW_TO = {
    Platform.SLACK: N_(
        "Send me your snapshot in a direct message: the .pickle file written by "
        "torch.cuda.memory._dump_snapshot(), with the GPU's memory in GiB as the message "
        "(e.g. 80) if it is not the snapshot's own. I answer there, privately."
    ),
    Platform.DISCORD: N_(
        "Use /quiz clinic with the snapshot attached (the .pickle file written by "
        "torch.cuda.memory._dump_snapshot()) and, if needed, gpu_memory in GiB. The answer "
        "is shown only to you."
    ),
    Platform.CONSOLE: N_(
        "Type /clinic PATH [GPU memory in GiB], PATH being a file written by "
        "torch.cuda.memory._dump_snapshot()."
    ),
}
RECORD_HINT = N_(
    "Record one with torch.cuda.memory._record_memory_history(max_entries=100000), run the "
    'steps that run out of memory, then torch.cuda.memory._dump_snapshot("snapshot.pickle").'
)


DEFAULT_MAX_JOBS = 4


class ClinicAdmission:
    """The snapshots this bot process has in the clinic, queued or running: at most one
    per member and `max_jobs` in all (``QUIZBOT_CLINIC_MAX_JOBS``), so a few members
    sending files cannot queue work the runner would take minutes to get through.

    Per process: each replica admits its own `max_jobs` (the runner's own queue is
    shared). One event loop, so no lock: `admitted` checks and takes a place at once.
    """

    def __init__(self, max_jobs: int = DEFAULT_MAX_JOBS) -> None:
        if max_jobs < 1:
            raise ValueError(f"max_jobs must be at least 1, got {max_jobs}")
        self.max_jobs = max_jobs
        self._jobs = 0
        self._members: dict[str, str] = {}  # member key -> the name of their snapshot

    @property
    def jobs(self) -> int:
        """Snapshots admitted and not finished."""
        return self._jobs

    def check(self, member: UserRef | None, name: str, locale: Locale) -> None:
        """Raises `ClinicBusyError` (in `locale`) when `member` already has a snapshot in
        the clinic, or every place is taken. A file route asks before any download."""
        t = translator(locale)
        key = member.key if member is not None else None
        if key is not None and key in self._members:
            raise ClinicBusyError(
                t(
                    "🩺 `{name}` was not analysed: your snapshot `{first}` is still being "
                    "checked. Send this one again once its answer arrives.",
                    name=name,
                    first=self._members[key],
                )
            )
        if self._jobs >= self.max_jobs:
            raise ClinicBusyError(
                t(
                    "🩺 The memory clinic is busy with {jobs} snapshots: send `{name}` again "
                    "in a few minutes.",
                    jobs=self._jobs,
                    name=name,
                )
            )

    @contextlib.contextmanager
    def admitted(self, job: ClinicJob) -> Iterator[None]:
        """Hold a place for `job` while the block runs; raises `ClinicBusyError` (in the
        job's locale) when the member already has one, or every place is taken."""
        self.check(job.member, job.name, job.locale)
        key = job.member.key if job.member is not None else None
        self._jobs += 1
        if key is not None:
            self._members[key] = job.name
        try:
            yield
        finally:
            self._jobs -= 1
            if key is not None:
                self._members.pop(key, None)


ClinicDelivery = PrivateReply
"""Where a member's clinic answers go, privately (an ephemeral reply, a DM, the terminal)."""


def progress_message(progress: ClinicProgress, name: str, locale: Locale) -> Message:
    t = translator(locale)
    if progress.stage is ClinicStage.QUEUED:
        body = t("🩺 `{name}`: queued for the memory clinic…", name=name)
    elif progress.stage is ClinicStage.READING:
        body = t("🩺 `{name}`: reading the snapshot…", name=name)
    elif progress.stage is ClinicStage.REPLAYING:
        body = t(
            "🩺 `{name}`: replaying under {done}/{total} allocator settings…",
            name=name,
            done=progress.done,
            total=progress.total,
        )
    else:
        body = t("🩺 `{name}`: done.", name=name)
    return Message(body=body)


class Clinic:
    """`max_jobs` (``QUIZBOT_CLINIC_MAX_JOBS``): snapshots this process takes at once, one
    per member (`ClinicAdmission`)."""

    def __init__(
        self, runner: ClinicRunner, service: QuizService, *, max_jobs: int = DEFAULT_MAX_JOBS
    ) -> None:
        self.runner = runner
        self.service = service
        self.admission = ClinicAdmission(max_jobs)
        self._problems = ThrottledLog(log)

    @property
    def available(self) -> bool:
        """False with QUIZBOT_RUNNER=off: a platform can say so before taking a file."""
        return bool(getattr(self.runner, "enabled", True))

    async def examine(self, job: ClinicJob, delivery: ClinicDelivery) -> None:
        """Analyse `job` and deliver the result privately; never raises. A member whose
        previous snapshot is still in the clinic, or a full clinic, gets one line saying
        so (the upload is deleted)."""
        t = translator(job.locale)
        try:
            with self.admission.admitted(job):
                await delivery.status(
                    Message(
                        body=t(
                            "🩺 Analysing `{name}` — a snapshot of millions of events takes "
                            "a few seconds…",
                            name=job.name,
                        )
                    )
                )

                async def on_progress(progress: ClinicProgress) -> None:
                    await delivery.status(progress_message(progress, job.name, job.locale))

                callback: ProgressCallback = on_progress
                result = await self.runner.run_clinic(job, callback)
        except UserFacingError as exc:
            job.discard()
            await self._deliver(delivery, Message(body=str(exc)))
            return
        except Exception as exc:
            job.discard()
            self._problems.problem(problem_key("clinic", exc), "the memory clinic failed", exc=exc)
            await self._deliver(delivery, failure_message(job.locale, exc))
            return
        log.info("memory clinic: %s", dict(result.summary))
        image = Image(result.png_name, result.png, result.title) if result.png else None
        await self._deliver(delivery, Message(title=result.title, body=result.text, image=image))

    async def _deliver(self, delivery: ClinicDelivery, message: Message) -> None:
        try:
            await delivery.result(message)
        except Exception as exc:
            self._problems.problem(
                problem_key("clinic delivery", exc), "could not deliver a clinic result", exc=exc
            )


COMMAND = "clinic"
SNAPSHOT_OPTION = CommandOption(
    "snapshot",
    N_("your torch.cuda.memory._dump_snapshot() file (.pickle)"),
    kind=OptionKind.ATTACHMENT,
)
GPU_MEMORY_OPTION = CommandOption(
    "gpu_memory",
    N_("the GPU's memory in GiB (default: the snapshot's own, else 80)"),
    kind=OptionKind.NUMBER,
    min_value=GPU_MEMORY_GIB_RANGE[0],
    max_value=GPU_MEMORY_GIB_RANGE[1],
)


_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def gib_written(text: str) -> str | None:
    """The GPU size a member wrote beside the file ("80", "80 GiB", "gpu_memory=80")."""
    found = _NUMBER.search(text or "")
    return found.group(0).replace(",", ".") if found else None


def snapshots(clinic: Clinic, max_bytes: int) -> FileRoute:
    """Snapshots members send (`/quiz clinic snapshot:`, a `.pickle` in a Slack DM, the
    console's `/clinic PATH`): refused before any download when the clinic is off, the
    file is over QUIZBOT_CLINIC_MAX_MB or the GPU size is not one; else analysed."""

    async def accept(sent: SentFile) -> FileWork:
        if not clinic.available:
            raise clinic_off_error(sent.locale)
        check_snapshot_size(sent.size, max_bytes, sent.name, sent.locale)
        given = sent.options.get(GPU_MEMORY_OPTION.name)
        gib = str(given) if given is not None else gib_written(sent.text)
        gpu_memory = gpu_memory_from_gib(gib, sent.locale) if gib is not None else None
        clinic.admission.check(sent.user, sent.name, sent.locale)  # before any download

        async def examine(path: Path, reply: PrivateReply) -> None:
            # The adapter owns `path` and deletes it after this returns.
            job = ClinicJob(
                path, sent.locale, gpu_memory, delete_after=False, name=sent.name, member=sent.user
            )
            await clinic.examine(job, reply)

        return examine

    def takes(name: str) -> bool:
        return name.lower().endswith((".pickle", ".pkl"))

    return FileRoute(COMMAND, SNAPSHOT_OPTION.name, max_bytes, takes, accept)


def feature(parts: Parts) -> Feature:
    """`/quiz clinic` (how to send a snapshot on this platform) and the snapshots sent."""
    assert parts.runner is not None, "the clinic needs a runner"
    clinic = Clinic(parts.runner, parts.service, max_jobs=parts.settings.clinic_max_jobs)

    async def how(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        t = translator(inv.locale)
        how = HOW_TO.get(inv.channel.platform, HOW_TO[Platform.CONSOLE])
        return [Reply(Message(body=t(how) + "\n\n" + t(RECORD_HINT)))]

    return Feature(
        "clinic",
        commands=[
            Command(
                COMMAND,
                how,
                "clinic",
                N_("check your PyTorch memory snapshot under other allocator settings"),
                options=(SNAPSHOT_OPTION, GPU_MEMORY_OPTION),
            )
        ],
        files=[snapshots(clinic, parts.settings.clinic_max_bytes)],
    )


__all__ = [
    "DEFAULT_MAX_JOBS",
    "GPU_MEMORY_OPTION",
    "SNAPSHOT_OPTION",
    "Clinic",
    "ClinicAdmission",
    "ClinicDelivery",
    "feature",
    "gib_written",
    "progress_message",
    "snapshots",
]
