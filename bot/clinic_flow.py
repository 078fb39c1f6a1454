"""The memory clinic in chat: a member's snapshot in, a private report out.

Every platform hands the core a `ClinicJob` (a downloaded attachment, a file in a direct
message, a console path) and a `ClinicDelivery` (where the member's private status line
and result go); `examine` does the rest: it says at once that the file is being analysed,
edits that line as the runner reports progress (queued → reading → replaying n/m → done),
and delivers the table, the line to copy and the plot — or one clear line saying what to
fix. The analysis runs on the runner (never in the bot); nothing but the summary is kept.
"""

from __future__ import annotations

import logging
from typing import Protocol

from bot.clinic import (
    GPU_MEMORY_GIB_RANGE,
    ClinicJob,
    ClinicProgress,
    ClinicStage,
    ProgressCallback,
)
from bot.commands import (
    CommandOption,
    CommandSet,
    Invocation,
    OptionKind,
    Reply,
    failure_message,
)
from bot.domain import Locale, Platform
from bot.errors import UserFacingError
from bot.i18n import N_, translator
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
# Recording needs CUDA: without a GPU the simulator writes one to try the clinic with.
SAMPLE_HINT = N_(
    "No GPU at hand? quizbot sim sample-snapshot sample.pickle writes a sample: a batch that "
    "grows until the default allocator runs out of memory."
)


class ClinicDelivery(Protocol):
    """Where a member's clinic answers go, privately (an ephemeral reply, a DM, the
    terminal)."""

    async def status(self, message: Message) -> None:
        """Show the status line, or replace the one shown."""
        ...

    async def result(self, message: Message) -> None:
        """The final answer (the report with its plot in `message.image`, or a refusal)."""
        ...


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
    def __init__(self, runner: ClinicRunner, service: QuizService) -> None:
        self.runner = runner
        self.service = service
        self._problems = ThrottledLog(log)

    @property
    def available(self) -> bool:
        """False with QUIZBOT_RUNNER=off: a platform can say so before taking a file."""
        return bool(getattr(self.runner, "enabled", True))

    async def examine(self, job: ClinicJob, delivery: ClinicDelivery) -> None:
        """Analyse `job` and deliver the result privately; never raises."""
        t = translator(job.locale)
        try:
            await delivery.status(
                Message(
                    body=t(
                        "🩺 Analysing `{name}` — a snapshot of millions of events takes a "
                        "few seconds…",
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


def register_clinic_command(cs: CommandSet) -> None:
    """`/quiz clinic`: how to send a snapshot on this platform. Where a command carries
    files (Discord's `snapshot` option), the adapter takes the file and runs `Clinic`;
    without one the command answers how to send it."""

    async def clinic(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        t = translator(inv.locale)
        how = HOW_TO.get(inv.channel.platform, HOW_TO[Platform.CONSOLE])
        return [Reply(Message(body=f"{t(how)}\n\n{t(RECORD_HINT)}\n\n{t(SAMPLE_HINT)}"))]

    cs.add("clinic", clinic, "clinic", options=[SNAPSHOT_OPTION, GPU_MEMORY_OPTION])


__all__ = [
    "GPU_MEMORY_OPTION",
    "SNAPSHOT_OPTION",
    "Clinic",
    "ClinicDelivery",
    "progress_message",
    "register_clinic_command",
]
