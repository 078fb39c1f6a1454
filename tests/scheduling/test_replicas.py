"""Two bot instances on one database: every slot posted once and revealed once.

Each instance has its own engine, service, scheduler and recording chat; at every stop of
the fake clock both tick at once, racing for every slot, close and resend. Some platform
calls fail on purpose, so resends race too: 200 slots (20 channels, 10 hours) on each
database, every one of them raced for by both instances.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from bot.clock import FakeClock
from bot.domain import ChannelRef, Platform, PostKind, PostState
from tests.scheduling.conftest import Instances, NamedChat, post_id_of, request, run_until

HOURS = 10
CHANNELS = 20  # hourly schedules x 10 hours = 200 slots
# Half the channels at :00 UTC, half at :30 UTC, written in each zone's local minute.
ZONES = (
    ("UTC", 0),
    ("Europe/Athens", 0),
    ("America/New_York", 0),
    ("Asia/Kolkata", 30),  # UTC+5:30
    ("Australia/Adelaide", 30),  # UTC+10:30 in March
)


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_two_instances_post_and_reveal_each_of_200_slots_exactly_once(
    instances: Instances, clock: FakeClock
) -> None:
    channels = CHANNELS
    start = datetime(2027, 3, 1, 5, 31, tzinfo=UTC)
    clock.set(start)
    a_chat, b_chat = NamedChat("a"), NamedChat("b")
    a_chat.fail_posts = 3  # a few sends fail: their claims are resent under a lease
    async with (
        instances(a_chat, seed=1) as a,
        instances(b_chat, seed=2) as b,
    ):
        schedules = []
        for i in range(channels):
            channel = ChannelRef(Platform.SLACK, "T1", f"C{i:02d}")
            zone, local_minute = ZONES[i % len(ZONES)]
            minute = (local_minute + 30 * (i % 2)) % 60
            text = f'cron "{minute} * * * *" {zone}'
            owner = a if i % 2 else b
            schedules.append(await owner.scheduler.add(channel, request(text, clock.now()), "U"))
        end = start + timedelta(hours=HOURS) - timedelta(seconds=1)
        steps = await run_until(clock, [a.scheduler, b.scheduler], end)
        # Stop the schedules; the open windows close (at most 24 h) and are revealed.
        for i in range(channels):
            await a.scheduler.disable(ChannelRef(Platform.SLACK, "T1", f"C{i:02d}"))
        await run_until(clock, [a.scheduler, b.scheduler], end + timedelta(hours=25))

        expected = {
            (s.id, slot)
            for s in schedules
            for slot in a.scheduler.upcoming(s, 50, after=start)
            if slot <= end
        }
        assert len(expected) == channels * HOURS
        posts = [
            p
            for i in range(channels)
            for p in await a.store.posts.history(ChannelRef(Platform.SLACK, "T1", f"C{i:02d}"))
            if p.kind is PostKind.SCHEDULED
        ]
    assert {(p.schedule_id, p.slot_at) for p in posts} == expected
    assert len(posts) == len(expected) and all(p.state is PostState.CLOSED for p in posts)

    # The platform saw each question once and each reveal once, across both instances.
    sent_posts = a_chat.of("post") + b_chat.of("post")
    posted_ids = Counter(post_id_of(s) for s in sent_posts)
    assert posted_ids == Counter({p.id: 1 for p in posts})
    by_ref = {p.message: p.id for p in posts}
    assert set(by_ref) == {s.ref for s in sent_posts}
    reveals = Counter(by_ref[s.parent] for s in a_chat.of("thread") + b_chat.of("thread"))
    assert reveals == Counter({p.id: 1 for p in posts})
    # Both instances did part of the work, and the failed sends were resent.
    assert a_chat.of("post") and b_chat.of("post")
    resent = (
        a.service.metrics.reconciler_retries.value() + b.service.metrics.reconciler_retries.value()
    )
    assert resent == 3
    assert steps >= 2 * HOURS
