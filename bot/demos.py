"""Demo dispatch: record a run, say so in the thread, run it, post the result once.

Platform-neutral: this module knows the `DemoRunner` port, a `DemoRunRepository` port
(below) and a `DemoCatalog` (the registry's ids and parameter check), never the runner's
or the storage's code. A run moves queued → running → succeeded / failed / timed_out; the
status line posted at once is edited into the result, and the PNG is uploaded to the
thread. Posting is exactly-once through a conditional update on ``posted_at``; pending runs
survive a restart (`resume()`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import TracebackType
from typing import Any, Protocol, Self, runtime_checkable

from bot.commands import CommandSet, Invocation, Reply
from bot.domain import (
    ChannelRef,
    DemoJob,
    DemoPolicy,
    DemoResult,
    DemoState,
    Locale,
    MessageRef,
    Reveal,
)
from bot.errors import UserFacingError
from bot.i18n import translator
from bot.messages import ActionKind, Button, ButtonStyle, Image, Message
from bot.ports import DemoRunner
from bot.quiz import QuizService

log = logging.getLogger(__name__)

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

    async def get(self, run_id: int) -> DemoRun | None: ...

    async def for_post(self, post_id: int) -> list[DemoRun]: ...

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


SchedulePolicy = Callable[[int], Awaitable[DemoPolicy | None]]
"""The demo policy of a schedule, by schedule id (None: use the channel's)."""


class DemoDispatcher:
    """Runs demos for reveals (channel policy AUTO), buttons and `/quiz demo`."""

    def __init__(
        self,
        service: QuizService,
        runs: DemoRunRepository,
        runner: DemoRunner,
        catalog: DemoCatalog,
        *,
        start_timeout: float = 900.0,
        result_timeout: float = 900.0,
        schedule_policy: SchedulePolicy | None = None,
    ) -> None:
        self.service = service
        self.schedule_policy = schedule_policy
        self.runs = runs
        self.runner = runner
        self.catalog = catalog
        self.start_timeout = start_timeout
        self.result_timeout = result_timeout
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def enabled(self) -> bool:
        return self.runner.enabled

    def attach(self) -> None:
        """Listen to reveals."""
        self.service.on_reveal.append(self.on_reveal)

    async def __aenter__(self) -> Self:
        self.attach()
        await self.resume()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- entry points -------------------------------------------------------------------

    async def on_reveal(self, reveal: Reveal, thread_locale: Locale) -> None:
        post, demo = reveal.post, reveal.question.demo
        if demo is None or post.message is None or not self.enabled:
            return
        if demo not in self.catalog.ids():
            log.warning(
                "question %s names demo %r, which is not registered", reveal.question.id, demo
            )
            return
        policy = (await self.service.store.settings.get(post.channel)).demo_policy
        if post.schedule_id is not None and self.schedule_policy is not None:
            # A scheduled question follows its schedule's demo policy.
            policy = await self.schedule_policy(post.schedule_id) or policy
        if policy is DemoPolicy.AUTO:
            await self.request(
                post.channel, demo, thread_locale, post_id=post.id, parent=post.message
            )
        elif policy is DemoPolicy.BUTTON:
            t = translator(thread_locale)
            await self.service.chat(post.channel).reply_in_thread(
                post.message,
                Message(
                    body=t("A demonstration goes with this question: `{demo}`.", demo=demo),
                    buttons=(
                        Button(
                            t("Run the demo"), ActionKind.DEMO, post.id, demo, ButtonStyle.PRIMARY
                        ),
                    ),
                ),
            )

    async def request_for_post(
        self, post_id: int, demo: str, locale: Locale | None = None
    ) -> DemoRun | None:
        """A demo button was clicked under a question: run it once per question."""
        post = await self.service.store.posts.get(post_id)
        if post is None or post.message is None:
            return None
        return await self.request(
            post.channel, demo, locale or post.locale, post_id=post.id, parent=post.message
        )

    async def request(
        self,
        channel: ChannelRef,
        demo: str,
        locale: Locale,
        params: Mapping[str, object] | None = None,
        *,
        post_id: int | None = None,
        parent: MessageRef | None = None,
    ) -> DemoRun:
        """Record a run and start driving it. Unknown demos and bad parameters raise
        `UserFacingError` before anything is recorded or run."""
        checked = dict(self.catalog.check(demo, params or {}))
        if post_id is not None:
            for existing in await self.runs.for_post(post_id):
                if existing.demo == demo:
                    return existing  # one run per question and demo (AUTO, then a click)
        run = await self.runs.create(
            channel, demo, locale, checked, self.service.clock.now(), post_id=post_id, parent=parent
        )
        self._spawn(self._drive(run, submit=True))
        return run

    async def resume(self) -> int:
        """After a restart: re-await what the runner still has, resubmit the rest, and
        post finished results that were never posted. Returns the number of runs taken."""
        if not self.enabled:
            return 0
        tracker = self.runner if isinstance(self.runner, TrackingRunner) else None
        taken = 0
        for run in await self.runs.unfinished():
            known = tracker is not None and await tracker.knows(run.id)
            if run.finished:
                result = await self.runner.result(run.id, 1.0) if known else None
                self._spawn(self._publish(run, result or _stored_result(run)))
            else:
                if not known and run.state is DemoState.RUNNING:
                    await self.runs.requeue(run.id)
                    run = replace(run, state=DemoState.QUEUED)
                self._spawn(self._drive(run, submit=not known))
            taken += 1
        return taken

    async def drain(self) -> None:
        """Wait until every run this dispatcher drives has been posted (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def aclose(self) -> None:
        """Stop driving runs; they stay recorded and `resume()` picks them up later."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
        self._tasks.clear()

    # -- driving one run ----------------------------------------------------------------

    def _spawn(self, coro: Any) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _drive(self, run: DemoRun, submit: bool) -> None:
        try:
            await self._drive_once(run, submit)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("demo run %s (%s) failed in the dispatcher", run.id, run.demo)

    async def _drive_once(self, run: DemoRun, submit: bool) -> None:
        chat = self.service.chat(run.channel)
        if run.status_message is None:
            line = status_message(run.demo, run.locale, None)
            ref = (
                await chat.reply_in_thread(run.parent, line)
                if run.parent
                else await chat.post_message(run.channel, line)
            )
            await self.runs.set_status_message(run.id, ref)
            run = replace(run, status_message=ref)
        if submit:
            job = DemoJob(run.id, run.demo, run.locale, dict(run.params))
            try:
                await self.runner.submit(job)
            except Exception as exc:  # refused, or the broker is unreachable
                reason = (
                    str(exc)
                    if isinstance(exc, UserFacingError)
                    else f"could not reach the demo runner ({type(exc).__name__}: {exc})"
                )
                await self._complete(
                    run, DemoResult(run.id, run.demo, DemoState.FAILED, "", error=reason)
                )
                return
        if isinstance(self.runner, TrackingRunner):
            device = await self.runner.started(run.id, self.start_timeout)
        else:
            device = ""
        if (
            device is not None
            and await self.runs.mark_running(run.id, device, self.service.clock.now())
            and device
        ):
            assert run.status_message is not None
            await self._quietly(
                chat.update_message(
                    run.status_message, status_message(run.demo, run.locale, device)
                )
            )
        result = await self.runner.result(run.id, self.result_timeout)
        if result is None:
            t = translator(run.locale)
            result = DemoResult(
                run.id,
                run.demo,
                DemoState.TIMED_OUT,
                device or "",
                error=t("no result within {seconds} s", seconds=round(self.result_timeout)),
            )
        await self._complete(run, result)

    async def _complete(self, run: DemoRun, result: DemoResult) -> None:
        await self.runs.finish(run.id, result, self.service.clock.now())
        await self._publish(run, result)

    async def _publish(self, run: DemoRun, result: DemoResult) -> None:
        if not await self.runs.claim_posting(run.id, self.service.clock.now()):
            return  # another instance (or an earlier attempt) posted it
        self.service.metrics.demos.inc(state=result.state.value)
        try:
            chat = self.service.chat(run.channel)
            message = result_message(run.demo, run.locale, result)
            if run.status_message is not None:
                await chat.update_message(run.status_message, message)
            elif run.parent is not None:
                run = replace(run, status_message=await chat.reply_in_thread(run.parent, message))
            else:
                run = replace(run, status_message=await chat.post_message(run.channel, message))
            if result.png and result.state is DemoState.SUCCEEDED and run.thread is not None:
                await chat.upload_image(run.thread, Image(f"{run.demo}.png", result.png, run.demo))
        except BaseException:
            await self.runs.release_posting(run.id)
            raise

    @staticmethod
    async def _quietly(coro: Any) -> None:
        try:
            await coro
        except Exception:
            log.warning("could not update a demo status line", exc_info=True)


# -- messages ---------------------------------------------------------------------------


def status_message(demo: str, locale: Locale, device: str | None) -> Message:
    """ "queued…", then "running on NVIDIA H200…" or "simulating…"."""
    t = translator(locale)
    if device is None:
        body = t("⏳ Demo `{demo}`: queued…", demo=demo)
    elif "simulated" in device:
        body = t("⚙️ Demo `{demo}`: simulating (no GPU)…", demo=demo)
    else:
        body = t("⚙️ Demo `{demo}`: running on {device}…", demo=demo, device=device)
    return Message(body=body)


def result_message(demo: str, locale: Locale, result: DemoResult) -> Message:
    t = translator(locale)
    if result.state is DemoState.SUCCEEDED:
        return Message(
            title=t("Demo · {demo}", demo=demo), body=result.report, footer=result.device
        )
    if result.state is DemoState.TIMED_OUT:
        body = t("⏱️ Demo `{demo}` timed out: {error}", demo=demo, error=result.error)
    else:
        body = t(
            "⚠️ Demo `{demo}` failed: {error}", demo=demo, error=result.error or t("no reason given")
        )
    return Message(body=body, footer=result.device)


def _stored_result(run: DemoRun) -> DemoResult:
    """A finished run's result as recorded (the PNG is not stored)."""
    return DemoResult(
        run.id, run.demo, run.state, run.device, run.report, run.metrics, None, run.error
    )


# -- the command ------------------------------------------------------------------------


def parse_params(words: Sequence[str], demo: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for word in words:
        name, sep, value = word.partition("=")
        if not sep or not name or not value:
            raise UserFacingError(
                f"{word!r} is not a demo parameter; write name=value, e.g. "
                f"/quiz demo {demo} blocks=8"
            )
        params[name] = value
    return params


def register_demo_commands(cs: CommandSet, dispatcher: DemoDispatcher) -> None:
    """`/quiz demo <id> [name=value ...]`."""

    async def demo(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        t = translator(inv.locale)
        ids = dispatcher.catalog.ids()
        if not args or args[0] not in ids:
            head = t("Unknown demo {name!r}.", name=args[0]) if args else t("Which demo?")
            return [
                Reply(
                    Message(
                        body=head
                        + " "
                        + t(
                            "Demos: {ids}. Example: /quiz demo {example}",
                            ids=", ".join(ids),
                            example=ids[0] if ids else "",
                        )
                    )
                )
            ]
        if not dispatcher.enabled:
            return [
                Reply(
                    Message(
                        body=t(
                            "Demos are off on this bot (QUIZBOT_RUNNER=off); an operator can set "
                            "QUIZBOT_RUNNER=local or celery."
                        )
                    )
                )
            ]
        params = parse_params(args[1:], args[0])
        locale = (await service.store.settings.get(inv.channel)).locale
        await dispatcher.request(inv.channel, args[0], locale, params)
        return []

    cs.add("demo", demo, "demo <id>")


__all__ = [
    "DemoCatalog",
    "DemoDispatcher",
    "DemoRun",
    "DemoRunRepository",
    "TrackingRunner",
    "register_demo_commands",
    "result_message",
    "status_message",
]
