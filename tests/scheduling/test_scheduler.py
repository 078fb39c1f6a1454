"""The scheduler on a real database (SQLite and PostgreSQL), driven by the fake clock."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.clock import FakeClock
from bot.domain import ChannelRef, Platform, PostKind, PostState
from storage.store import SqlStore
from tests.fakes import RecordingChat
from tests.scheduling.conftest import Instance, Instances, post_id_of, request, run_until

ATHENS = ZoneInfo("Europe/Athens")


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


async def scheduled_posts(store: SqlStore, channel: ChannelRef) -> list:  # type: ignore[type-arg]
    return sorted(
        (p for p in await store.posts.history(channel) if p.kind is PostKind.SCHEDULED),
        key=lambda p: p.slot_at,
    )


async def test_athens_schedule_posts_at_0930_local_across_spring_and_reveals_at_the_next_slot(
    bot: Instance, clock: FakeClock, channel: ChannelRef
) -> None:
    clock.set(utc(2027, 3, 24, 12))
    await bot.scheduler.add(channel, request("09:30 Europe/Athens mon-fri", clock.now()), "U1")
    await run_until(clock, [bot.scheduler], utc(2027, 4, 1, 12))

    posts = await scheduled_posts(bot.store, channel)
    assert [p.slot_at for p in posts] == [
        utc(2027, 3, 25, 7, 30),  # Thu, EET
        utc(2027, 3, 26, 7, 30),  # Fri
        utc(2027, 3, 29, 6, 30),  # Mon, EEST after Sunday's change
        utc(2027, 3, 30, 6, 30),
        utc(2027, 3, 31, 6, 30),
        utc(2027, 4, 1, 6, 30),
    ]
    assert all(p.created_at == p.slot_at for p in posts)  # claimed at the slot, not later
    # Window: until the channel's next slot, at most 24 h (Friday's closes Saturday 09:30).
    assert posts[0].closes_at == posts[1].slot_at
    assert posts[1].closes_at == posts[1].slot_at + timedelta(hours=24)
    assert [p.state for p in posts] == [PostState.CLOSED] * 5 + [PostState.OPEN]
    # Each question posted once, each closed one revealed once in its own thread.
    assert sorted(post_id_of(s) for s in bot.chat.of("post")) == sorted(p.id for p in posts)
    parents = [s.parent for s in bot.chat.of("thread")]
    assert sorted(parents, key=str) == sorted((p.message for p in posts[:5]), key=str)


async def test_0230_schedule_posts_once_on_the_spring_forward_night_however_often_it_ticks(
    bot: Instance, clock: FakeClock, channel: ChannelRef
) -> None:
    clock.set(utc(2027, 3, 27, 12))
    await bot.scheduler.add(channel, request("02:30 Europe/Berlin", clock.now()), "U1")
    # Tick every 5 minutes through the night, as a busy trigger might.
    while clock.now() < utc(2027, 3, 28, 6):
        clock.advance(timedelta(minutes=5))
        await bot.scheduler.tick()
    posts = await scheduled_posts(bot.store, channel)
    assert [p.slot_at for p in posts] == [utc(2027, 3, 28, 1, 30)]  # 03:30 CEST, once


async def test_two_schedules_in_a_channel_close_each_other_and_explicit_windows_win(
    bot: Instance, clock: FakeClock, channel: ChannelRef
) -> None:
    clock.set(utc(2027, 5, 3, 6))
    await bot.scheduler.add(channel, request("09:00 UTC", clock.now()), "U1")
    await bot.scheduler.add(channel, request("13:00 UTC", clock.now()), "U1")
    other = ChannelRef(channel.platform, channel.workspace, "C2")
    await bot.scheduler.add(other, request("09:00 UTC window 90m", clock.now()), "U1")
    await run_until(clock, [bot.scheduler], utc(2027, 5, 3, 14))
    first, second = await scheduled_posts(bot.store, channel)
    assert first.closes_at == utc(2027, 5, 3, 13) and first.state is PostState.CLOSED
    assert second.closes_at == utc(2027, 5, 4, 9)
    (windowed,) = await scheduled_posts(bot.store, other)
    assert windowed.closes_at == utc(2027, 5, 3, 10, 30) and windowed.state is PostState.CLOSED


async def test_after_downtime_the_latest_missed_slot_within_grace_is_posted_once(
    instances: Instances, clock: FakeClock, channel: ChannelRef, caplog: pytest.LogCaptureFixture
) -> None:
    clock.set(utc(2027, 5, 3, 8))
    chat1, chat2 = RecordingChat(), RecordingChat()
    async with instances(chat1) as one:
        await one.scheduler.add(channel, request("09:00 UTC", clock.now()), "U1")
        await run_until(clock, [one.scheduler], utc(2027, 5, 3, 10))
    assert len(chat1.of("post")) == 1
    # Down for three days; back 40 minutes after Thursday's slot.
    clock.set(utc(2027, 5, 6, 9, 40))
    with caplog.at_level(logging.WARNING, logger="bot.scheduling"):
        async with instances(chat2) as two:
            await two.scheduler.tick()
            await two.scheduler.tick()
            posts = await scheduled_posts(two.store, channel)
    assert [p.slot_at for p in posts] == [utc(2027, 5, 3, 9), utc(2027, 5, 6, 9)]
    assert len(chat2.of("post")) == 1
    assert "skipped 2 missed slot(s)" in caplog.text
    # The question left open during the downtime was revealed at start.
    assert [s.parent for s in chat2.of("thread")] == [posts[0].message]


async def test_a_slot_missed_by_more_than_the_grace_period_is_skipped_and_logged(
    instances: Instances, clock: FakeClock, channel: ChannelRef, caplog: pytest.LogCaptureFixture
) -> None:
    clock.set(utc(2027, 5, 3, 8))
    async with instances(RecordingChat()) as one:
        await one.scheduler.add(channel, request("09:00 UTC", clock.now()), "U1")
    clock.set(utc(2027, 5, 3, 10, 30))  # 90 minutes late
    chat = RecordingChat()
    with caplog.at_level(logging.WARNING, logger="bot.scheduling"):
        async with instances(chat) as two:
            assert chat.of("post") == []
            assert "beyond the 1:00:00 grace period: skipped" in caplog.text
            assert two.service.metrics.skipped_slots.value() == 1
            await run_until(clock, [two.scheduler], utc(2027, 5, 4, 9, 30))
            posts = await scheduled_posts(two.store, channel)
    assert [p.slot_at for p in posts] == [utc(2027, 5, 4, 9)]


async def test_a_post_whose_window_passed_during_downtime_is_revealed_on_start(
    instances: Instances, clock: FakeClock, channel: ChannelRef
) -> None:
    clock.set(utc(2027, 5, 3, 8))
    chat1 = RecordingChat()
    async with instances(chat1) as one:
        await one.scheduler.add(channel, request("09:00 UTC window 2h", clock.now()), "U1")
        await run_until(clock, [one.scheduler], utc(2027, 5, 3, 9, 30))
        (posted,) = chat1.of("post")
        assert chat1.of("thread") == []
    clock.set(utc(2027, 5, 3, 12))  # the 11:00 close happened while the bot was down
    chat2 = RecordingChat()
    async with instances(chat2) as two:
        (post,) = await scheduled_posts(two.store, channel)
        assert post.state is PostState.CLOSED
        (reveal,) = chat2.of("thread")
        assert reveal.parent == posted.ref
        await two.scheduler.tick()
    assert len(chat2.of("thread")) == 1 and chat2.of("post") == []


class HangingChat(RecordingChat):
    """The process dies while the platform call is in flight: it never returns."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = asyncio.Event()

    async def post_message(self, channel, message):  # type: ignore[no-untyped-def]
        self.entered.set()
        await asyncio.Event().wait()


async def test_stopped_between_claim_and_send_the_question_is_posted_once_after_restart(
    instances: Instances, clock: FakeClock, channel: ChannelRef
) -> None:
    clock.set(utc(2027, 5, 3, 8, 59))
    hanging = HangingChat()
    async with instances(hanging) as one:
        await one.scheduler.add(channel, request("09:00 UTC", clock.now()), "U1")
        clock.set(utc(2027, 5, 3, 9))
        tick = asyncio.create_task(one.scheduler.tick())
        await asyncio.wait_for(hanging.entered.wait(), timeout=10)
        tick.cancel()  # the process is killed mid-send
        await asyncio.gather(tick, return_exceptions=True)
        (claimed,) = await scheduled_posts(one.store, channel)
        assert claimed.state is PostState.CLAIMED and claimed.message is None

    chat = RecordingChat()
    clock.set(utc(2027, 5, 3, 9, 0, 30))  # restarted at once: the send lease still holds
    async with instances(chat) as two:
        assert chat.of("post") == []
        clock.advance(two.scheduler.send_lease)
        await run_until(clock, [two.scheduler], utc(2027, 5, 3, 12))
        (post,) = await scheduled_posts(two.store, channel)
        assert post.id == claimed.id and post.state is PostState.OPEN
        (sent,) = chat.of("post")
        assert post_id_of(sent) == claimed.id and post.message == sent.ref
        assert two.service.metrics.reconciler_retries.value() == 1
    assert hanging.of("post") == []


async def test_a_failed_send_is_resent_once_after_the_lease_even_with_two_reconcilers(
    instances: Instances, clock: FakeClock, channel: ChannelRef
) -> None:
    clock.set(utc(2027, 5, 3, 8))
    a_chat, b_chat = RecordingChat(), RecordingChat()
    a_chat.fail_posts = 1
    async with (
        instances(a_chat) as a,
        instances(b_chat, seed=8) as b,
    ):
        await a.scheduler.add(channel, request("09:00 UTC", clock.now()), "U1")
        clock.set(utc(2027, 5, 3, 9))
        await a.scheduler.tick()  # claims, then the platform call fails
        await b.scheduler.tick()  # b lost the claim; the post is not stale yet
        assert a_chat.of("post") == b_chat.of("post") == []
        clock.advance(a.scheduler.send_lease)
        await asyncio.gather(a.scheduler.tick(), b.scheduler.tick(), a.scheduler.tick())
        assert len(a_chat.of("post")) + len(b_chat.of("post")) == 1
        (post,) = await scheduled_posts(a.store, channel)
        assert post.state is PostState.OPEN


async def test_an_unsent_post_whose_window_is_over_is_closed_without_posting(
    instances: Instances, clock: FakeClock, channel: ChannelRef
) -> None:
    clock.set(utc(2027, 5, 3, 8))
    chat = RecordingChat()
    chat.fail_posts = 1
    async with instances(chat) as one:
        await one.scheduler.add(channel, request("09:00 UTC window 30m", clock.now()), "U1")
        clock.set(utc(2027, 5, 3, 9))
        await one.scheduler.tick()
        clock.set(utc(2027, 5, 3, 9, 45))
        report = await one.scheduler.tick()
        assert report.abandoned == 1
        (post,) = await scheduled_posts(one.store, channel)
        assert post.state is PostState.CLOSED and post.message is None
    assert chat.sent == []


async def test_a_schedule_turned_off_on_one_instance_stops_on_the_other(
    instances: Instances, clock: FakeClock, channel: ChannelRef
) -> None:
    clock.set(utc(2027, 5, 3, 8))
    a_chat, b_chat = RecordingChat(), RecordingChat()
    async with (
        instances(a_chat) as a,
        instances(b_chat) as b,
    ):
        created = await a.scheduler.add(channel, request("09:00 UTC", clock.now()), "U1")
        clock.set(utc(2027, 5, 3, 9))
        await b.scheduler.tick()  # b picks up a's new schedule from the table
        assert len(b_chat.of("post")) == 1
        assert await a.scheduler.disable(channel, created.id) == [created.id]
        clock.set(utc(2027, 5, 4, 9))
        await asyncio.gather(a.scheduler.tick(), b.scheduler.tick())
        assert len(a_chat.of("post")) + len(b_chat.of("post")) == 1
        assert b.service.metrics.schedules.value() == 0


async def test_an_instance_leaves_slots_of_platforms_it_does_not_run_to_others(
    instances: Instances, clock: FakeClock
) -> None:
    clock.set(utc(2027, 5, 3, 8))
    discord = ChannelRef(Platform.DISCORD, "G1", "C1")
    slack_chat, discord_chat = RecordingChat(), RecordingChat()
    async with (
        instances(slack_chat, platforms=[Platform.SLACK]) as slack_bot,
        instances(discord_chat, platforms=[Platform.DISCORD]) as discord_bot,
    ):
        await slack_bot.scheduler.add(discord, request("09:00 UTC window 1h", clock.now()), "U1")
        clock.set(utc(2027, 5, 3, 9))
        await slack_bot.scheduler.tick()
        assert slack_chat.sent == []
        await discord_bot.scheduler.tick()
        clock.set(utc(2027, 5, 3, 10))
        await slack_bot.scheduler.tick()  # must not close (and lose) the Discord reveal
        await discord_bot.scheduler.tick()
    assert slack_chat.sent == []
    assert [s.kind for s in discord_chat.sent] == ["post", "update", "thread"]


async def test_metrics_count_posts_reveals_and_the_scheduler_lag(
    bot: Instance, clock: FakeClock, channel: ChannelRef
) -> None:
    clock.set(utc(2027, 5, 3, 8))
    await bot.scheduler.add(channel, request("09:00 UTC", clock.now()), "U1")
    clock.set(utc(2027, 5, 3, 9, 0, 3))  # the trigger woke 3 s late
    await bot.scheduler.tick()
    clock.set(utc(2027, 5, 4, 9))
    await bot.scheduler.tick()
    m = bot.service.metrics
    assert m.posts.value(kind="scheduled") == 2
    assert m.reveals.value() == 1
    assert m.scheduler_lag.value() == 0.0  # the second slot was on time
    text = m.registry.render()
    assert 'quizbot_posts_total{kind="scheduled"} 2' in text
    assert "quizbot_reveals_total 1" in text
