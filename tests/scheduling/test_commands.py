"""`/quiz schedule set|list|off` through the platform-neutral command runner."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from bot.admin import EVERYONE, NOBODY
from bot.clock import FakeClock
from bot.commands import CommandSet, Invocation, Reply, run_command
from bot.domain import ChannelRef, DemoPolicy, Locale
from bot.features import Quiz
from bot.quiz import QuizService
from bot.scheduling.recurrence import MAX_CRON_LENGTH
from storage.store import SqlStore
from tests.conftest import user

ADMIN, PLAYER = user("admin"), user("player")


@pytest.fixture
def commands(basic: Quiz) -> CommandSet:
    return basic.commands


async def run(
    commands: CommandSet,
    service: QuizService,
    channel: ChannelRef,
    text: str,
    *,
    admin: bool = True,
    locale: Locale = Locale.EN,
) -> list[Reply]:
    inv = Invocation(channel, ADMIN if admin else PLAYER, locale, EVERYONE if admin else NOBODY)
    return await run_command(commands, service, inv, text)


def body(replies: list[Reply]) -> str:
    return "\n".join(f"{r.message.title}\n{r.message.body}" for r in replies)


async def test_set_stores_the_schedule_and_echoes_the_next_three_times_in_the_channels_zone(
    commands: CommandSet,
    service: QuizService,
    store: SqlStore,
    clock: FakeClock,
    channel: ChannelRef,
) -> None:
    clock.set(datetime(2027, 3, 25, 12, tzinfo=UTC))  # Thursday, before the spring change
    replies = await run(commands, service, channel, "schedule set 09:30 Europe/Athens mon-fri")
    (reply,) = replies
    assert reply.private is False
    text = body(replies)
    assert "09:30 Europe/Athens mon-fri" in text
    assert re.findall(r"- (\w{3} \S+ \S+) \(Europe/Athens\)", text) == [
        "Fri 2027-03-26 09:30",
        "Mon 2027-03-29 09:30",
        "Tue 2027-03-30 09:30",
    ]
    (stored,) = await store.schedules.in_channel(channel)
    assert (stored.timezone, stored.local_time, stored.weekdays) == (
        "Europe/Athens",
        "09:30",
        "mon-fri",
    )
    # The channel now shows close times in the schedule's zone.
    assert (await store.settings.get(channel)).timezone == "Europe/Athens"
    assert stored.demo_policy is DemoPolicy.AUTO  # the channel's, when not given
    await run(commands, service, channel, "schedule set 18:00 demo button")
    later = (await store.schedules.in_channel(channel))[-1]
    assert later.demo_policy is DemoPolicy.BUTTON and later.timezone == "Europe/Athens"


async def test_list_shows_each_schedule_with_its_window_and_next_times(
    commands: CommandSet, service: QuizService, clock: FakeClock, channel: ChannelRef
) -> None:
    clock.set(datetime(2027, 5, 3, 12, tzinfo=UTC))
    await run(commands, service, channel, "schedule set 09:30 Europe/Athens mon-fri window 8h")
    await run(commands, service, channel, 'schedule set cron "0 18 * * fri" Europe/Athens')
    text = body(await run(commands, service, channel, "schedule list"))
    assert "#1" in text and "answer window: 8h" in text
    assert '#2 · cron "0 18 * * fri" Europe/Athens' in text.replace("*#2*", "#2")
    assert "until the next question (at most 24 h)" in text
    assert "Fri 2027-05-07 18:00 (Europe/Athens)" in text


async def test_off_turns_one_or_all_schedules_off(
    commands: CommandSet, service: QuizService, store: SqlStore, channel: ChannelRef
) -> None:
    await run(commands, service, channel, "schedule set 09:30 UTC")
    await run(commands, service, channel, "schedule set 17:00 UTC")
    assert "Turned off 1 schedule: #1." in body(
        await run(commands, service, channel, "schedule off 1")
    )
    assert [s.id for s in await store.schedules.in_channel(channel)] == [2]
    assert "no schedule #1" in body(await run(commands, service, channel, "schedule off #1"))
    assert "#2" in body(await run(commands, service, channel, "schedule off"))
    assert await store.schedules.in_channel(channel) == []
    assert "no schedules" in body(await run(commands, service, channel, "schedule list"))


async def test_schedules_of_another_channel_cannot_be_turned_off_from_here(
    commands: CommandSet, service: QuizService, store: SqlStore, channel: ChannelRef
) -> None:
    other = ChannelRef(channel.platform, channel.workspace, "C-other")
    await run(commands, service, other, "schedule set 09:30 UTC")
    assert "no schedule #1" in body(await run(commands, service, channel, "schedule off 1"))
    assert len(await store.schedules.in_channel(other)) == 1


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("schedule set 09:30 Europe/Atlantis mon-fri", "unknown time zone 'Europe/Atlantis'"),
        ("schedule set 25:00 Europe/Athens mon-fri", "'25:00' is not a time of day"),
        ('schedule set 09:30 Europe/Athens ""', "the weekday set is empty"),
        ('schedule set cron "0 9 30 2 *" Europe/Athens', "never fires"),
        ("schedule set cron 0 9 31 4 * Europe/Athens", "never fires"),
        ("schedule frobnicate", "Unknown schedule action 'frobnicate'"),
        ("schedule off three", "'three' is not a schedule number"),
        # Hostile values: refused before any arithmetic or storage, and echoed cut short.
        (
            "schedule set 09:30 UTC window 99999999999999999999d",
            "an answer window of 99999999999999999999d is out of range: use 1m to 7d",
        ),
        (
            "schedule set 09:30 UTC window " + "9" * 1900 + "d",  # /quiz takes 2000 characters
            "an answer window of " + "9" * 60 + "… is out of range",
        ),
        ("schedule set 09:30 " + "x" * 1900, "'" + "x" * 60 + "…' is not a time"),
        ("schedule off 100000000000000000000000", "'100000000000000000000000' is not a sched"),
        ("schedule off 9223372036854775808", "'9223372036854775808' is not a schedule number"),
        ("schedule off ²", "'²' is not a schedule number"),
        (
            'schedule set cron "*/100000000000000000000 * * * *" UTC',
            "the minute field '*/100000000000000000000' of the cron expression is not valid",
        ),
        ('schedule set cron "*/² * * * *" UTC', "the minute field '*/²' of the cron"),
        (
            'schedule set cron "' + "0," * 70 + '0 9 * * *" UTC',
            "the cron expression is 149 characters long, the limit is 128: write long lists",
        ),
    ],
)
async def test_bad_input_gets_a_message_naming_the_problem_and_a_working_example(
    commands: CommandSet,
    service: QuizService,
    store: SqlStore,
    channel: ChannelRef,
    text: str,
    problem: str,
) -> None:
    message = body(await run(commands, service, channel, text))
    assert problem in message
    example = re.search(r"Example that works: (/quiz (.*))$", message)
    assert example is not None, message
    # The example really works: run it as the admin would.
    worked = body(await run(commands, service, channel, example.group(2)))
    assert "Example that works" not in worked
    assert len(await store.schedules.in_channel(channel)) == (
        1 if example.group(2).startswith("schedule set") else 0
    )


async def test_a_cron_expression_as_long_as_the_column_is_stored_and_read_back(
    commands: CommandSet, service: QuizService, store: SqlStore, channel: ChannelRef
) -> None:
    minutes = ",".join(str(m) for m in range(0, 60, 2))
    days = ",".join(str(d) for d in range(1, 16))
    expression = f"{minutes} 009 {days} * *"  # the hour padded to reach the limit exactly
    assert len(expression) == MAX_CRON_LENGTH
    await run(commands, service, channel, f'schedule set cron "{expression}" UTC')
    (stored,) = await store.schedules.in_channel(channel)
    assert stored.cron == expression


async def test_only_admins_may_schedule(
    commands: CommandSet, service: QuizService, store: SqlStore, channel: ChannelRef
) -> None:
    text = body(await run(commands, service, channel, "schedule set 09:30 UTC", admin=False))
    assert "Only workspace admins" in text
    assert await store.schedules.in_channel(channel) == []


async def test_a_greek_channel_gets_greek_answers(
    commands: CommandSet, service: QuizService, clock: FakeClock, channel: ChannelRef
) -> None:
    clock.set(datetime(2027, 5, 3, 12, tzinfo=UTC))  # Monday
    text = body(
        await run(commands, service, channel, "schedule set 09:30 Europe/Athens", locale=Locale.EL)
    )
    assert "Τρι 2027-05-04 09:30 (Europe/Athens)" in text
    bad = body(await run(commands, service, channel, "schedule set 25:00", locale=Locale.EL))
    assert "25:00" in bad and "not a time of day" not in bad
