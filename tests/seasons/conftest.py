"""The league's fixtures: the quiz with the basic commands, the scheduler (ticked by the
tests: APScheduler off), seasons and teams; commands run as an admin or a member."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from bot import basics, scheduling, seasons, teams
from bot.admin import EVERYONE, NOBODY
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.commands import Invocation, run_command
from bot.domain import ChannelRef, Locale, Platform, UserRef
from bot.features import Quiz
from bot.messages import Message
from bot.scheduling import Scheduler
from bot.seasons import SeasonKeeper
from storage.store import SqlStore
from tests.fakes import RecordingChat
from tests.quiz import quiz_of, service_of

T0 = datetime(2027, 1, 4, 9, 0, tzinfo=UTC)  # a Monday
LEAGUE = [basics.feature, scheduling.feature, seasons.feature, teams.feature]


@pytest.fixture
async def league(
    store: SqlStore, chat: RecordingChat, bank: QuestionBank, clock: FakeClock
) -> AsyncIterator[Quiz]:
    clock.set(T0)
    chats = {Platform.CONSOLE: chat, Platform.SLACK: chat, Platform.DISCORD: chat}
    async with quiz_of(store, chats, bank, clock, features=LEAGUE) as q:
        yield q


@pytest.fixture
def scheduler(league: Quiz) -> Scheduler:
    return service_of(league, Scheduler)


@pytest.fixture
def keeper(league: Quiz) -> SeasonKeeper:
    return service_of(league, SeasonKeeper)


async def say(
    quiz: Quiz, channel: ChannelRef, who: UserRef, text: str, *, admin: bool = False
) -> Message:
    """Run one `/quiz` command; its one reply."""
    inv = Invocation(channel, who, Locale.EN, EVERYONE if admin else NOBODY)
    replies = await run_command(quiz.commands, quiz.service, inv, text)
    assert len(replies) == 1, replies
    return replies[0].message


def text_of(message: Message) -> str:
    return "\n".join(p for p in (message.title, message.body, message.footer) if p)
