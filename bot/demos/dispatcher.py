"""Demo dispatch: record a run, say so in the thread, run it, post the result once.

Platform-neutral: this module knows the `DemoRunner` port, a `DemoRunRepository` port
and a `DemoCatalog` (the registry's ids and parameter check), never the runner's or the
storage's code. A run moves queued → running → succeeded / failed / timed_out; the status
line posted at once is edited into the result, and the PNG is uploaded to the thread.
Posting is exactly-once through a conditional update on ``posted_at``; pending runs
survive a restart (`resume()`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from bot.demos.messages import result_message, status_message
from bot.demos.runs import DemoCatalog, DemoRun, DemoRunRepository, TrackingRunner
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
from bot.lifecycle import Lifecycle
from bot.messages import Button, ButtonStyle, Image, Message
from bot.ports import DemoRunner
from bot.quiz import QuizService
from bot.tasks import TaskSupervisor

log = logging.getLogger(__name__)
DEMO = "demo"  # the reveal's "Run the demo" button (value: the demo id)
TRACE_KIND = "allocator-trace"  # generated questions' inputs (docs/generated-questions.md)


SchedulePolicy = Callable[[int], Awaitable[DemoPolicy | None]]
"""The demo policy of a schedule, by schedule id (None: use the channel's)."""


class DemoDispatcher(Lifecycle):
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
        self.tasks = TaskSupervisor("demos")

    @property
    def enabled(self) -> bool:
        return self.runner.enabled

    async def initialize(self) -> None:
        """Pick up the runs a previous process left pending."""
        await self.resume()

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
            await self.request_for_post(post.id, demo, thread_locale)
        elif policy is DemoPolicy.BUTTON:
            t = translator(thread_locale)
            await self.service.chat(post.channel).reply_in_thread(
                post.message,
                Message(
                    body=t("A demonstration goes with this question: `{demo}`.", demo=demo),
                    buttons=(Button(t("Run the demo"), DEMO, post.id, demo, ButtonStyle.PRIMARY),),
                ),
            )

    async def request_for_post(
        self, post_id: int, demo: str, locale: Locale | None = None
    ) -> tuple[DemoRun, bool] | None:
        """Run a question's demo in its thread, once per question (whoever asks, on any
        replica): the run, and whether this call started it. None when the post has no
        message to thread under."""
        post = await self.service.store.posts.get(post_id)
        if post is None or post.message is None:
            return None
        question = await self.service.store.questions.get(post.question_hash)
        params = question_demo_params(question.inputs) if question is not None else {}
        checked = dict(self.catalog.check(demo, params))
        run, created = await self.runs.create_for_post(
            post, demo, locale or post.locale, checked, self.service.clock.now()
        )
        if created:
            self.tasks.spawn(self._drive(run, submit=True), name=f"demo-{run.id}")
        return run, created

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
        run = await self.runs.create(
            channel, demo, locale, checked, self.service.clock.now(), post_id=post_id, parent=parent
        )
        self.tasks.spawn(self._drive(run, submit=True), name=f"demo-{run.id}")
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
                self.tasks.spawn(self._publish(run, result or _stored_result(run)))
            else:
                if not known and run.state is DemoState.RUNNING:
                    await self.runs.requeue(run.id)
                    run = replace(run, state=DemoState.QUEUED)
                self.tasks.spawn(self._drive(run, submit=not known), name=f"demo-{run.id}")
            taken += 1
        return taken

    async def drain(self) -> None:
        """Wait until every run this dispatcher drives has been posted (tests, shutdown)."""
        await self.tasks.drain()

    async def shutdown(self) -> None:
        """Stop driving runs; they stay recorded and `resume()` picks them up later."""
        await self.tasks.cancel()

    # -- driving one run ----------------------------------------------------------------

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
        if result.metrics.get("gpu_value") is not None and result.metrics.get("agree") is False:
            log.warning(
                "demo run %s: the real allocator gave %s for %s where the question's answer "
                "(the simulator) is %s",
                run.id,
                result.metrics.get("gpu_value"),
                result.metrics.get("ask"),
                result.metrics.get("simulator_value"),
            )
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


def question_demo_params(inputs: Mapping[str, Any]) -> dict[str, object]:
    """What a question gives its demo: a generated allocator trace is replayed by the
    `allocator-trace` demo (its canonical `inputs`, without the family's own data)."""
    if inputs.get("kind") != TRACE_KIND:
        return {}
    return {"inputs": {k: v for k, v in inputs.items() if k != "generated"}}


def _stored_result(run: DemoRun) -> DemoResult:
    """A finished run's result as recorded (the PNG is not stored)."""
    return DemoResult(
        run.id, run.demo, run.state, run.device, run.report, run.metrics, None, run.error
    )


__all__ = ["DemoDispatcher", "SchedulePolicy"]
