"""APScheduler as the production trigger: one job per schedule, rebuilt on change, and a
real wake-up that posts a slot (the clock is offset so the slot is a second away)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from bot.bank import QuestionBank
from bot.clock import FakeClock, OffsetClock, SystemClock
from bot.domain import ChannelRef, MessageRef, PostKind
from bot.messages import Message
from bot.scheduling.trigger import RECONCILE_JOB
from tests.fakes import RecordingChat
from tests.scheduling.conftest import Instances, instance, request


async def test_each_schedule_is_one_job_with_coalescing_and_a_misfire_grace(
    instances: Instances, clock: FakeClock, channel: ChannelRef
) -> None:
    async with instances(RecordingChat(), use_apscheduler=True) as bot:
        sched = bot.scheduler
        assert await sched.healthy()
        first = await sched.add(channel, request("09:30 Europe/Athens mon-fri", clock.now()), "U")
        second = await sched.add(channel, request('cron "*/5 * * * *" UTC', clock.now()), "U")
        aps = sched.apscheduler
        assert aps is not None
        assert set(sched.jobs()) == {str(first.id), str(second.id), RECONCILE_JOB}
        job = aps.get_job(str(first.id))
        assert job.coalesce is True and job.misfire_grace_time == 3600
        # The job's next run is the schedule's next slot, 09:30 in Athens.
        assert job.next_run_time == sched.upcoming(first, 1)[0]
        assert job.next_run_time.astimezone(ZoneInfo("Europe/Athens")).strftime("%H:%M") == "09:30"
        await sched.disable(channel, first.id)
        assert set(sched.jobs()) == {str(second.id), RECONCILE_JOB}
    assert not await sched.healthy()


class SignallingChat(RecordingChat):
    def __init__(self) -> None:
        super().__init__()
        self.posted = asyncio.Event()

    async def post_message(self, channel: ChannelRef, message: Message) -> MessageRef:
        ref = await super().post_message(channel, message)
        self.posted.set()
        return ref


async def test_the_apscheduler_trigger_posts_the_slot_when_it_comes(
    db_url: str, bank: QuestionBank, channel: ChannelRef
) -> None:
    just_before = datetime(2027, 6, 1, 8, 59, 57, tzinfo=UTC)
    clock = OffsetClock(SystemClock())
    chat = SignallingChat()
    async with instance(db_url, clock, bank, chat, use_apscheduler=True) as bot:
        # Set after the start (which may take seconds on a busy machine): the slot is 3 s on.
        clock.advance(just_before - clock.now())
        await bot.scheduler.add(channel, request("09:00 UTC", clock.now()), "U")
        # The trigger is real: wait (with a deadline) for APScheduler to wake the scheduler.
        await asyncio.wait_for(chat.posted.wait(), timeout=20)
        (post,) = await bot.store.posts.history(channel)
    assert post.kind is PostKind.SCHEDULED
    assert post.slot_at == datetime(2027, 6, 1, 9, tzinfo=UTC)
    assert timedelta(0) <= post.created_at - post.slot_at < timedelta(seconds=5)
    assert len(chat.of("post")) == 1
