"""Exactly one podium across replicas: two processes (two engines, one database) tick
across a season's end at once; and a restart across the end posts it at start-up."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta

import pytest

from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import ChannelRef, Platform
from bot.features import Quiz
from bot.scheduling import Scheduler
from storage.store import SqlStore
from tests.boards.conftest import play
from tests.conftest import user
from tests.quiz import quiz_of, service_of
from tests.scheduling.conftest import NamedChat
from tests.seasons.conftest import LEAGUE, T0, say
from tests.seasons.test_team_scores import WS, check_team_boards

pytestmark = pytest.mark.slow

CHANNELS = [ChannelRef(Platform.SLACK, "T1", f"C{i}") for i in range(6)]
ANN, BOB = user("ann"), user("bob")


@dataclass
class Replica:
    quiz: Quiz
    scheduler: Scheduler
    chat: NamedChat


@asynccontextmanager
async def replica(
    db_url: str, clock: FakeClock, bank: QuestionBank, name: str
) -> AsyncIterator[Replica]:
    chat = NamedChat(name)
    async with (
        SqlStore(db_url, clock=clock) as store,
        quiz_of(store, {Platform.SLACK: chat}, bank, clock, features=LEAGUE) as quiz,
    ):
        scheduler = service_of(quiz, Scheduler)
        yield Replica(quiz, scheduler, chat)


def podiums(*chats: NamedChat) -> list[tuple[str, str]]:
    return [
        (sent.channel.channel, sent.message.title)
        for chat in chats
        for sent in chat.sent
        if sent.kind == "post" and sent.message is not None and "is over" in sent.message.title
    ]


async def test_two_replicas_crossing_the_end_post_each_podium_once(
    db_url: str, bank: QuestionBank
) -> None:
    clock = FakeClock(T0)
    async with (
        replica(db_url, clock, bank, "a") as a,
        replica(db_url, clock, bank, "b") as b,
    ):
        for i, channel in enumerate(CHANNELS):
            await say(a.quiz, channel, ANN, f"season start S{i} 1", admin=True)
            await play(a.quiz.service, channel, {ANN: True, BOB: i % 2 == 0})
        clock.set(T0 + timedelta(days=6, hours=14))  # 23:00 on the last day
        await asyncio.gather(a.scheduler.tick(), b.scheduler.tick())
        assert podiums(a.chat, b.chat) == []
        clock.set(T0 + timedelta(days=7))
        for _ in range(3):
            await asyncio.gather(a.scheduler.tick(), b.scheduler.tick())
        found = podiums(a.chat, b.chat)
        assert sorted(found) == sorted(
            (c.channel, f"🏆 Season S{i} is over") for i, c in enumerate(CHANNELS)
        )
        # After the lease, nobody posts them again.
        clock.advance(timedelta(minutes=10))
        await asyncio.gather(a.scheduler.tick(), b.scheduler.tick())
        assert len(podiums(a.chat, b.chat)) == len(CHANNELS)


async def test_a_restart_across_the_end_posts_the_podium_at_start_up(
    db_url: str, bank: QuestionBank
) -> None:
    clock = FakeClock(T0)
    async with replica(db_url, clock, bank, "before") as before:
        await say(before.quiz, CHANNELS[0], ANN, "season start Spring 1", admin=True)
        await play(before.quiz.service, CHANNELS[0], {ANN: True, BOB: False})
    clock.set(T0 + timedelta(days=9))  # down across the end
    async with replica(db_url, clock, bank, "after") as after:
        # The scheduler's start-up pass caught up: no tick needed.
        assert podiums(after.chat) == [("C0", "🏆 Season Spring is over")]
        await after.scheduler.tick()
    assert podiums(before.chat, after.chat) == [("C0", "🏆 Season Spring is over")]


async def test_a_failed_podium_is_posted_after_its_lease(db_url: str, bank: QuestionBank) -> None:
    clock = FakeClock(T0)
    async with replica(db_url, clock, bank, "a") as a:
        await say(a.quiz, CHANNELS[0], ANN, "season start Spring 1", admin=True)
        a.chat.fail_posts = 1
        clock.set(T0 + timedelta(days=7))
        await a.scheduler.tick()
        assert podiums(a.chat) == []
        clock.advance(timedelta(minutes=1))
        await a.scheduler.tick()
        assert podiums(a.chat) == []  # the lease still holds
        nxt = await a.scheduler.next_event(clock.now())
        assert nxt is not None
        clock.set(nxt)
        await a.scheduler.tick()
        assert podiums(a.chat) == [("C0", "🏆 Season Spring is over")]


async def test_closes_and_a_join_on_two_replicas_keep_the_team_boards_exact(
    db_url: str, bank: QuestionBank
) -> None:
    """Six closes of one workspace and a join, split over two replicas at once: each
    recomputes the same teams' rows; none is lost (the team rows' lock)."""
    clock = FakeClock(T0)
    cat, dan = user("cat"), user("dan")
    async with (
        replica(db_url, clock, bank, "a") as a,
        replica(db_url, clock, bank, "b") as b,
    ):
        await say(a.quiz, CHANNELS[0], ANN, "season start Cup 2", admin=True)
        for name, who in (("Owls", (ANN, BOB)), ("Foxes", (cat,))):
            await say(a.quiz, CHANNELS[0], ANN, f"team create {name}")
            for member in who:
                await say(a.quiz, CHANNELS[0], member, f"team join {name}")
        for day in range(3):
            posts = []
            for i, channel in enumerate(CHANNELS):
                answers = {ANN: True, BOB: i % 2 == day % 2, cat: i % 3 != 0, dan: True}
                posts.append(await play(a.quiz.service, channel, answers, close=False))
            closes = [
                (a if i % 2 else b).quiz.service.close(post.id) for i, post in enumerate(posts)
            ]
            joined = say(b.quiz, CHANNELS[1], dan, "team join Foxes") if day == 1 else None
            await asyncio.gather(*closes, *([joined] if joined else []))
            await check_team_boards(a.quiz.service.store, clock, CHANNELS[0])
            clock.advance(timedelta(days=1))
        board = await a.quiz.service.store.leagues.standings(WS)
        foxes = {t.name: t for t in board.scores}["Foxes"]
        assert foxes.members == 2 and foxes.active == 2
