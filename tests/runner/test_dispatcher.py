"""Dispatch and posting: reveal → status line → result edited in → PNG in the thread,
exactly once, across failures and restarts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from bot.clock import FakeClock
from bot.commands import CommandSet, Invocation, run_command
from bot.demo_runner import OffRunner
from bot.demos import DEMO, DemoDispatcher, demo_commands, demo_feature
from bot.domain import (
    ChannelRef,
    ChannelSettings,
    DemoJob,
    DemoPolicy,
    DemoResult,
    DemoState,
    Locale,
    MessageRef,
    Platform,
    Post,
)
from bot.features import Quiz
from bot.interactions import Click
from bot.quiz import QuizService
from gpu_runner.demos import SIMULATED_DEVICE
from gpu_runner.executor import Executor, ExecutorConfig
from gpu_runner.local import LocalRunner
from storage.demo_runs import SqlDemoRunRepository
from tests.conftest import user
from tests.fakes import RecordingChat
from tests.polling import eventually
from tests.quiz import asked
from tests.runner.fault_demos import PNG, SOURCE, pid_path
from tests.scheduling.conftest import schedule_at

CHANNEL = ChannelRef(Platform.SLACK, "T1", "C1")
OTHER_CHANNEL = ChannelRef(Platform.SLACK, "T1", "C2")
H200 = "NVIDIA H200 · torch 2.13.0 · CUDA 13.0"


def runs_of(service: QuizService) -> SqlDemoRunRepository:
    return SqlDemoRunRepository(service.store.sessions)  # type: ignore[attr-defined]


@pytest.fixture
def dispatcher(basic: Quiz, fault_executor: Executor) -> DemoDispatcher:
    """A dispatcher (not started) whose feature is in the quiz's registry: it listens to
    reveals and takes the demo button."""
    service = basic.service
    d = DemoDispatcher(
        service, runs_of(service), LocalRunner(fault_executor), fault_executor.registry
    )
    basic.registry.add(demo_feature(d))
    return d


def finals(chat: RecordingChat) -> list[str]:
    """Bodies of the edits that turned a status line into a result."""
    return [
        s.message.plain_text()
        for s in chat.of("update")
        if s.message is not None
        and not s.message.body.startswith(("⏳", "⚙️"))
        and "Demo" in s.message.plain_text()
    ]


async def set_policy(service: QuizService, policy: DemoPolicy) -> None:
    await service.store.settings.save(ChannelSettings(CHANNEL, demo_policy=policy))


async def closed_under(
    service: QuizService, dispatcher: DemoDispatcher, policy: DemoPolicy
) -> Post:
    """A fragmentation question asked and closed in a channel of `policy`, the dispatcher
    drained after it: its post (as asked)."""
    await set_policy(service, policy)
    post = await asked(service, CHANNEL, topic="fragmentation")
    await service.close(post.id)
    await dispatcher.drain()
    return post


async def test_reveal_posts_status_then_result_and_plot_in_the_question_thread(
    service: QuizService, chat: RecordingChat, dispatcher: DemoDispatcher
) -> None:
    post = await service.ask(CHANNEL, topic="fragmentation")
    assert post is not None and post.message is not None
    reveal = await service.close(post.id)
    assert reveal is not None and reveal.question.demo is not None
    demo = reveal.question.demo
    await dispatcher.drain()
    status = [s for s in chat.of("thread") if s.message and s.message.body.startswith("⏳")]
    assert len(status) == 1 and status[0].parent == post.message
    assert f"`{demo}`: queued…" in status[0].message.body  # type: ignore[union-attr]
    edits = [s for s in chat.of("update") if s.ref == status[0].ref]
    assert "simulating (no GPU)…" in edits[0].message.body  # type: ignore[union-attr]
    final = edits[-1].message
    assert final is not None and final.title == f"Demo · {demo}"
    assert final.footer == SIMULATED_DEVICE
    images = chat.of("image")
    assert len(images) == 1 and images[0].parent == post.message
    assert images[0].image is not None and images[0].image.data.startswith(b"\x89PNG")
    (run,) = await runs_of(service).for_post(post.id)
    assert run.state is DemoState.SUCCEEDED and run.posted_at is not None
    assert run.started_at is not None and run.device == SIMULATED_DEVICE
    assert service.metrics.demos.value(state="succeeded") == 1


async def test_button_policy_offers_a_button_and_runs_nothing(
    basic: Quiz, service: QuizService, chat: RecordingChat, dispatcher: DemoDispatcher
) -> None:
    post = await closed_under(service, dispatcher, DemoPolicy.BUTTON)
    buttons = [b for s in chat.of("thread") if s.message for b in s.message.buttons]
    assert [(b.action, b.post_id) for b in buttons] == [(DEMO, post.id)]
    assert await runs_of(service).for_post(post.id) == []
    interactions = basic.interactions

    def click(name: str) -> Click:
        found = Click.parse(buttons[0].encode(), user(name), CHANNEL)
        assert found is not None
        return found

    # Two members click at once, then a third one later: one run, in the thread.
    first, second = await asyncio.gather(
        interactions.click(click("ann")), interactions.click(click("bob"))
    )
    bodies = sorted([first.body, second.body])
    assert "its result appears in the question's thread" in bodies[0]
    assert "already running" in bodies[0] or "already running" in bodies[1]
    await dispatcher.drain()
    (run,) = await runs_of(service).for_post(post.id)
    assert run.parent == post.message
    later = await interactions.click(click("cy"))
    assert "already ran" in later.body
    assert len(chat.of("image")) == 1
    assert len(await runs_of(service).for_post(post.id)) == 1


async def test_a_demo_click_on_a_question_without_that_demo_runs_nothing(
    basic: Quiz, service: QuizService, dispatcher: DemoDispatcher
) -> None:
    post = await asked(service, CHANNEL, topic="fragmentation")
    interactions = basic.interactions
    forged = Click.parse(f"quiz:demo:{post.id}:view-keeps-storage", user("ann"), CHANNEL)
    assert forged is not None
    reply = await interactions.click(forged)
    assert "no demonstration" in reply.body
    elsewhere = Click.parse(f"quiz:demo:{post.id}:fragmentation", user("ann"), OTHER_CHANNEL)
    assert elsewhere is not None
    assert "not available" in (await interactions.click(elsewhere)).body
    assert await runs_of(service).for_post(post.id) == []


async def test_off_policy_runs_nothing(
    service: QuizService, chat: RecordingChat, dispatcher: DemoDispatcher
) -> None:
    post = await closed_under(service, dispatcher, DemoPolicy.OFF)
    assert await runs_of(service).for_post(post.id) == []
    assert chat.of("image") == []


@pytest.mark.parametrize(
    ("channel_policy", "schedule_policy", "runs"),
    [(DemoPolicy.AUTO, DemoPolicy.OFF, 0), (DemoPolicy.OFF, DemoPolicy.AUTO, 1)],
)
async def test_a_scheduled_question_follows_its_schedules_demo_policy(
    basic: Quiz,
    service: QuizService,
    chat: RecordingChat,
    fault_executor: Executor,
    clock: FakeClock,
    channel_policy: DemoPolicy,
    schedule_policy: DemoPolicy,
    runs: int,
) -> None:
    from bot.domain import PostKind
    from storage.schedules import SqlScheduleRepository

    store = service.store
    schedules = SqlScheduleRepository(store.sessions, store.refs)  # type: ignore[attr-defined]
    await set_policy(service, channel_policy)
    schedule = await schedule_at(
        service.store, CHANNEL, "09:30", schedule_policy, clock.now(), weekdays="mon-fri", by="ana"
    )

    async def policy_of(schedule_id: int) -> DemoPolicy | None:
        found = await schedules.get(schedule_id)
        return found.demo_policy if found else None

    d = DemoDispatcher(
        service,
        runs_of(service),
        LocalRunner(fault_executor),
        fault_executor.registry,
        schedule_policy=policy_of,
    )
    basic.registry.add(demo_feature(d))
    post = await service.ask(
        CHANNEL,
        topic="fragmentation",
        kind=PostKind.SCHEDULED,
        schedule_id=schedule.id,
        slot_at=clock.now(),
    )
    assert post is not None
    await service.close(post.id)
    await d.drain()
    assert len(await runs_of(service).for_post(post.id)) == runs


def commands(dispatcher: DemoDispatcher) -> CommandSet:
    return CommandSet(demo_commands(dispatcher))


INV = Invocation(CHANNEL, user("ana"), Locale.EN)


async def test_demo_command_posts_in_the_channel_and_the_plot_in_its_thread(
    service: QuizService, chat: RecordingChat, dispatcher: DemoDispatcher
) -> None:
    replies = await run_command(commands(dispatcher), service, INV, "demo reserved-vs-allocated")
    assert replies == []
    await dispatcher.drain()
    (status,) = chat.of("post")
    assert status.message is not None and status.message.body.startswith("⏳")
    final = [s for s in chat.of("update") if s.ref == status.ref][-1]
    assert final.message is not None and "666,894,336" in final.message.body
    (image,) = chat.of("image")
    assert image.parent == status.ref


async def test_demo_command_with_an_unknown_id_lists_the_demos(
    service: QuizService, chat: RecordingChat, dispatcher: DemoDispatcher
) -> None:
    (reply,) = await run_command(commands(dispatcher), service, INV, "demo nope")
    assert "Unknown demo 'nope'" in reply.message.body
    assert "fragmentation, caching-allocator" in reply.message.body
    assert chat.sent == []


async def test_out_of_range_parameter_is_refused_before_anything_is_recorded(
    service: QuizService, chat: RecordingChat, dispatcher: DemoDispatcher
) -> None:
    (reply,) = await run_command(commands(dispatcher), service, INV, "demo fragmentation blocks=99")
    assert "blocks=99 is out of range; use 4..32" in reply.message.body
    (bad,) = await run_command(commands(dispatcher), service, INV, "demo fragmentation 99")
    assert "name=value" in bad.message.body
    assert chat.sent == []
    assert await runs_of(service).unfinished() == []


async def test_demo_command_when_demos_are_off(
    service: QuizService, chat: RecordingChat, fault_executor: Executor
) -> None:
    off = DemoDispatcher(service, runs_of(service), OffRunner(), fault_executor.registry)
    (reply,) = await run_command(commands(off), service, INV, "demo fragmentation")
    assert "QUIZBOT_RUNNER=off" in reply.message.body
    assert chat.sent == []


async def test_a_crashing_demo_posts_one_clear_failure_line(
    service: QuizService, chat: RecordingChat, dispatcher: DemoDispatcher
) -> None:
    run = await dispatcher.request(CHANNEL, "crash", Locale.EN)
    await dispatcher.drain()
    (final,) = finals(chat)
    assert final.startswith("⚠️ Demo `crash` failed: RuntimeError: boom")
    assert chat.of("image") == []
    stored = await runs_of(service).get(run.id)
    assert stored is not None and stored.state is DemoState.FAILED
    assert stored.error == "RuntimeError: boom"


async def test_a_hanging_demo_posts_a_timeout_line(
    service: QuizService, chat: RecordingChat, token: int
) -> None:
    with Executor(ExecutorConfig(registry=SOURCE, torch=False, timeout=1.0)) as ex:
        d = DemoDispatcher(service, runs_of(service), LocalRunner(ex), ex.registry)
        run = await d.request(CHANNEL, "hang", Locale.EN, {"token": token})
        await d.drain()
    pid_path(token).unlink(missing_ok=True)
    (final,) = finals(chat)
    assert final.startswith("⏱️ Demo `hang` timed out: did not finish within 1 s")
    stored = await runs_of(service).get(run.id)
    assert stored is not None and stored.state is DemoState.TIMED_OUT


async def test_bot_restart_mid_demo_still_posts_the_result_once(
    service: QuizService,
    chat: RecordingChat,
    fault_executor: Executor,
    token: int,
    open_gate: Callable[[int], None],
) -> None:
    runs = runs_of(service)
    runner_a = LocalRunner(Executor(ExecutorConfig(registry=SOURCE, torch=False)))
    await runner_a.initialize()
    first = DemoDispatcher(service, runs, runner_a, fault_executor.registry)
    run = await first.request(CHANNEL, "gate", Locale.EN, {"token": token})

    async def running() -> bool:
        current = await runs.get(run.id)
        return current is not None and current.state is DemoState.RUNNING

    await eventually(running, what="the demo to run")
    await first.shutdown()  # the bot process dies mid-demo...
    await runner_a.shutdown()  # ...and its fork server with it
    open_gate(token)
    second = DemoDispatcher(service, runs, LocalRunner(fault_executor), fault_executor.registry)
    assert await second.resume() == 1
    await second.drain()
    stored = await runs.get(run.id)
    assert stored is not None and stored.state is DemoState.SUCCEEDED
    assert stored.posted_at is not None
    assert len(chat.of("post")) == 1  # the status line was not posted again
    assert finals(chat) == ["Demo · gate\ngate passed\ntest device"]
    assert len(chat.of("image")) == 1
    third = DemoDispatcher(service, runs, LocalRunner(fault_executor), fault_executor.registry)
    assert await third.resume() == 0


class RememberingRunner:
    """A runner that still has a job after the bot restarted (as Celery does)."""

    enabled = True

    def __init__(self, results: dict[int, DemoResult]) -> None:
        self.results = results
        self.submitted: list[DemoJob] = []

    async def submit(self, job: DemoJob) -> None:
        self.submitted.append(job)

    async def started(self, run_id: int, timeout: float) -> str | None:
        return H200

    async def result(self, run_id: int, timeout: float) -> DemoResult | None:
        return self.results.get(run_id)

    async def knows(self, run_id: int) -> bool:
        return run_id in self.results


async def test_resume_reawaits_a_run_the_runner_still_has(
    service: QuizService, chat: RecordingChat, clock: FakeClock, fault_executor: Executor
) -> None:
    runs = runs_of(service)
    run = await runs.create(CHANNEL, "fragmentation", Locale.EN, {}, clock.now())
    status = MessageRef(CHANNEL, "status-1")
    await runs.set_status_message(run.id, status)
    await runs.mark_running(run.id, H200, clock.now())
    runner = RememberingRunner(
        {run.id: DemoResult(run.id, "fragmentation", DemoState.SUCCEEDED, H200, "done", {}, PNG)}
    )
    d = DemoDispatcher(service, runs, runner, fault_executor.registry)
    assert await d.resume() == 1
    await d.drain()
    assert runner.submitted == []
    (edit,) = chat.of("update")
    assert edit.ref == status and edit.message is not None and edit.message.footer == H200
    (image,) = chat.of("image")
    assert image.parent == status


async def test_two_instances_resuming_post_a_finished_result_once(
    service: QuizService, chat: RecordingChat, clock: FakeClock, fault_executor: Executor
) -> None:
    runs = runs_of(service)
    run = await runs.create(
        CHANNEL,
        "fragmentation",
        Locale.EN,
        {},
        clock.now(),
        parent=MessageRef(CHANNEL, "question-1"),
    )
    await runs.set_status_message(run.id, MessageRef(CHANNEL, "status-1"))
    await runs.finish(
        run.id,
        DemoResult(
            run.id,
            "fragmentation",
            DemoState.SUCCEEDED,
            "simulated allocator, no GPU",
            "the report",
        ),
        clock.now(),
    )
    a = DemoDispatcher(service, runs, RememberingRunner({}), fault_executor.registry)
    b = DemoDispatcher(service, runs, RememberingRunner({}), fault_executor.registry)
    await asyncio.gather(a.resume(), b.resume())
    await asyncio.gather(a.drain(), b.drain())
    assert finals(chat) == ["Demo · fragmentation\nthe report\nsimulated allocator, no GPU"]
