"""The click use case and the command policy, platform-neutral: one place decides the
locale of a reply, the admin refusal (in each platform's words), the failure reply, and
what an out-of-range or foreign click gets."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from datetime import timedelta
from urllib.parse import urlsplit, urlunsplit

import pytest

from bot.admin import NOBODY, AdminStatus
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.commands import Invocation, run_command
from bot.domain import ChannelRef, Locale, MessageRef, Platform
from bot.features import Quiz
from bot.interactions import Click, Interactions
from bot.messages import ANSWER, Button, Message
from bot.quiz import QuizService
from storage.faults import Backoff
from storage.store import SqlStore
from tests.conftest import user
from tests.fakes import RecordingChat
from tests.faults.proxy import TcpProxy
from tests.polling import WAIT
from tests.quiz import asked, quiz_of


def click(post_id: int, value: str, channel: ChannelRef, name: str = "ann") -> Click:
    parsed = Click.parse(Button("", ANSWER, post_id, value).encode(), user(name), channel)
    assert parsed is not None
    return parsed


async def test_clicks_that_name_no_valid_answer_get_a_clear_line_and_store_nothing(
    service: QuizService, basic: Quiz, channel: ChannelRef
) -> None:
    post = await asked(service, channel)
    interactions = basic.interactions
    other = ChannelRef(Platform.SLACK, "T1", "C-ELSEWHERE")
    replies = [
        await interactions.click(click(post.id, "9", channel)),
        await interactions.click(click(post.id, "x", channel)),
        await interactions.click(click(post.id + 1000, "0", channel)),
        await interactions.click(click(post.id, "0", other)),
    ]
    assert "not part of this question" in replies[0].body
    assert "not part of this question" in replies[1].body
    assert "not available any more" in replies[2].body
    assert "another channel" in replies[3].body
    assert await service.store.answers.for_post(post.id) == []
    assert Click.parse(f"quiz:answer:{2**63}:0", user("ann"), channel) is None


@pytest.mark.parametrize(
    ("platform", "words"),
    [
        (Platform.SLACK, "Only workspace admins"),
        (Platform.DISCORD, "Manage Server permission"),
        (Platform.CONSOLE, "Only admins"),
    ],
)
async def test_admin_refusals_speak_each_platforms_words(
    service: QuizService, basic: Quiz, platform: Platform, words: str
) -> None:
    where = ChannelRef(platform, "W1", "C1")
    inv = Invocation(where, user("bob"), Locale.EN, NOBODY)
    (reply,) = await run_command(basic.commands, service, inv, "close")
    assert words in reply.message.body and "/quiz close" in reply.message.body


async def test_an_admin_check_that_cannot_be_made_says_so_and_runs_nothing(
    service: QuizService, basic: Quiz, channel: ChannelRef
) -> None:
    post = await asked(service, channel)
    calls: list[str] = []

    async def unknown() -> AdminStatus:
        calls.append("users.info")
        return AdminStatus.UNKNOWN

    inv = Invocation(channel, user("boss"), Locale.EN, unknown)
    (reply,) = await run_command(basic.commands, service, inv, "close")
    assert "could not check whether you are an admin" in reply.message.body
    assert "QUIZBOT_ADMINS" in reply.message.body and "not an admin" not in reply.message.body
    assert (await service.store.posts.get(post.id)).state.value == "open"  # type: ignore[union-attr]
    # Commands that need no admin never ask the platform.
    inv = Invocation(channel, user("boss"), Locale.EN, unknown)
    await run_command(basic.commands, service, inv, "help")
    assert calls == ["users.info"]


async def test_a_second_ask_while_the_first_waits_to_be_posted_makes_no_second_question(
    service: QuizService, basic: Quiz, chat: RecordingChat, channel: ChannelRef
) -> None:
    chat.fail_posts = 5
    inv = Invocation(channel, user("ann"), Locale.EN)
    (first,) = await run_command(basic.commands, service, inv, "ask")
    assert "will be posted here as soon as it does" in first.message.body
    (second,) = await run_command(basic.commands, service, inv, "ask")
    assert "already waiting to be posted" in second.message.body
    assert len(await service.store.posts.unsent_in_channel(channel)) == 1


async def test_an_ask_while_the_first_question_is_still_being_sent_is_told_the_cooldown(
    service: QuizService,
    basic: Quiz,
    chat: RecordingChat,
    channel: ChannelRef,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Not "the platform is not answering": the first question is on its way.
    service.ask_cooldown = timedelta(seconds=30)
    sending, release = asyncio.Event(), asyncio.Event()
    post = chat.post_message

    async def slow_post(to: ChannelRef, message: Message) -> MessageRef:
        sending.set()
        await release.wait()
        return await post(to, message)

    monkeypatch.setattr(chat, "post_message", slow_post)
    ann = Invocation(channel, user("ann"), Locale.EN)
    first = asyncio.create_task(run_command(basic.commands, service, ann, "ask"))
    await asyncio.wait_for(sending.wait(), WAIT)
    bob = Invocation(channel, user("bob"), Locale.EN)
    (second,) = await run_command(basic.commands, service, bob, "ask")
    assert "works again in 30 seconds" in second.message.body
    release.set()
    await asyncio.wait_for(first, WAIT)
    assert not await service.store.posts.unsent_in_channel(channel)
    assert [s.kind for s in chat.sent].count("post") == 1  # one question, Ann's


@pytest.fixture
async def proxied_service(
    pg_url: str, clock: FakeClock, bank: QuestionBank
) -> AsyncIterator[tuple[QuizService, Interactions, TcpProxy]]:
    """A service whose PostgreSQL connection goes through a proxy the test can cut."""
    parts = urlsplit(pg_url)
    async with TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5432) as proxy:
        url = urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{proxy.port}"))
        async with SqlStore(url, clock=clock) as store:
            store.answers._backoff = Backoff(budget=0.5)
            chats = {Platform.SLACK: RecordingChat()}
            async with quiz_of(store, chats, bank, clock, features=[], seed=2) as quiz:
                yield quiz.service, quiz.interactions, proxy
                await proxy.accept()


@pytest.mark.postgres
async def test_with_the_database_gone_a_click_is_told_to_retry_in_the_channels_language(
    proxied_service: tuple[QuizService, Interactions, TcpProxy],
) -> None:
    service, interactions, proxy = proxied_service
    channel = ChannelRef(Platform.SLACK, "T-proxy", f"C{random.getrandbits(40)}")
    await service.set_locale(channel, Locale.EL)
    post = await asked(service, channel)
    await proxy.refuse()
    reply = await interactions.click(click(post.id, "1", channel))
    assert "δεν καταγράφηκε" in reply.body  # Greek, though the settings are in the database
    # Back up: the same user answers at once (nobody stays locked out).
    await proxy.accept()
    reply = await interactions.click(click(post.id, "1", channel))
    assert "✅" in reply.body or "❌" in reply.body
    assert len(await service.store.answers.for_post(post.id)) == 1


async def test_a_huge_command_is_refused_before_it_is_parsed(
    service: QuizService, basic: Quiz, channel: ChannelRef
) -> None:
    inv = Invocation(channel, user("ann"), Locale.EN)
    text = "ask " + '"' * 1_000_000
    loop = __import__("asyncio").get_running_loop()
    started = loop.time()
    (reply,) = await run_command(basic.commands, service, inv, text)
    assert "at most 2000" in reply.message.body
    assert loop.time() - started < 0.5


@pytest.mark.parametrize(
    ("platform", "words"),
    [
        (Platform.SLACK, "direct message"),
        (Platform.DISCORD, "snapshot attached"),
        (Platform.CONSOLE, "/clinic PATH"),
    ],
)
async def test_quiz_clinic_says_how_to_send_a_snapshot_on_each_platform(
    quiz: Quiz, platform: Platform, words: str
) -> None:
    inv = Invocation(ChannelRef(platform, "W", "C"), user("ann"), Locale.EN)
    (reply,) = await run_command(quiz.commands, quiz.service, inv, "clinic")
    assert words in reply.message.body and "_record_memory_history" in reply.message.body
    # No GPU to record one with: the simulator's sample.
    assert "quizbot sim sample-snapshot sample.pickle" in reply.message.body
    assert reply.private
