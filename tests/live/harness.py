"""Live rounds as the tests drive them: the quiz with the live feature (and schedules), a
recording chat, the fake clock; `tick` is the scheduler's pass."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta

from bot import basics, generated, live, scheduling
from bot.admin import EVERYONE, NOBODY
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.commands import Invocation, Reply, run_command
from bot.domain import ChannelRef, Locale, Platform, UserRef
from bot.features import FeatureFactory, Quiz
from bot.interactions import Click
from bot.live import LiveRounds
from bot.live.ports import LiveRound
from bot.messages import ANSWER, Button, Message
from bot.scheduling import Scheduler
from storage.store import SqlStore
from tests.fakes import RecordingChat, Sent
from tests.quiz import quiz_of, service_of

CHANNEL = ChannelRef(Platform.SLACK, "T1", "C1")
ADMIN = UserRef(Platform.SLACK, "T1", "UADMIN", "admin")
FEATURES: Sequence[FeatureFactory] = (
    basics.feature,
    generated.feature,
    live.feature,
    scheduling.feature,
)


def player(name: str) -> UserRef:
    return UserRef(Platform.SLACK, "T1", f"U{name.upper()}", name)


@dataclass
class Live:
    """One bot process: the quiz, its chat, its scheduler and live rounds."""

    quiz: Quiz
    chat: RecordingChat
    clock: FakeClock
    store: SqlStore

    @property
    def rounds(self) -> LiveRounds:
        return service_of(self.quiz, LiveRounds)

    @property
    def scheduler(self) -> Scheduler:
        return service_of(self.quiz, Scheduler)

    async def command(self, text: str, user: UserRef = ADMIN, *, admin: bool = True) -> list[Reply]:
        inv = Invocation(CHANNEL, user, Locale.EN, EVERYONE if admin else NOBODY)
        return await run_command(self.quiz.commands, self.quiz.service, inv, text)

    async def click(self, button: Button, user: UserRef, *, admin: bool = False) -> Message:
        click = Click.parse(button.encode(), user, CHANNEL, admin=EVERYONE if admin else NOBODY)
        assert click is not None
        return await self.quiz.interactions.click(click)

    async def answer(self, post_id: int, choice: int, user: UserRef) -> Message:
        return await self.click(Button("", ANSWER, post_id, str(choice)), user)

    async def tick(self) -> None:
        await self.scheduler.tick()

    async def at(self, delta: timedelta) -> None:
        """Let `delta` pass, then the scheduler's pass."""
        self.clock.advance(delta)
        await self.tick()

    async def active(self) -> LiveRound | None:
        return await self.store.live.active(CHANNEL)

    def questions(self) -> list[Sent]:
        """The live questions posted, in order."""
        return [
            s
            for s in self.chat.of("post")
            if s.message is not None and s.message.title.startswith("Live · question")
        ]

    def threads(self, title: str) -> list[Sent]:
        return [
            s
            for s in self.chat.of("thread")
            if s.message is not None and s.message.title.startswith(title)
        ]

    def lobby_button(self, action: str) -> Button:
        """The button of `action` on the one lobby posted."""
        (lobby,) = self.posts("Live round")
        assert lobby.message is not None
        return next(b for b in lobby.message.buttons if b.action == action)

    def posts(self, title: str) -> list[Sent]:
        return [
            s
            for s in self.chat.of("post")
            if s.message is not None and s.message.title.startswith(title)
        ]


def post_of(sent: Sent) -> int:
    assert sent.message is not None
    kind, post_id, _ = Button.decode(sent.message.buttons[0].encode()) or ("", 0, "")
    assert kind == ANSWER
    return post_id


@asynccontextmanager
async def live_quiz(
    store: SqlStore,
    bank: QuestionBank,
    clock: FakeClock,
    chat: RecordingChat | None = None,
    *,
    seed: int = 7,
    generated: bool = False,
    live_factory: FeatureFactory = live.feature,
) -> AsyncIterator[Live]:
    """The quiz with `FEATURES`; `live_factory` builds its live feature."""
    chat = chat or RecordingChat()
    chats = {Platform.SLACK: chat, Platform.DISCORD: chat, Platform.CONSOLE: chat}
    features = [live_factory if f is live.feature else f for f in FEATURES]
    async with quiz_of(
        store, chats, bank, clock, features=features, seed=seed, generated=generated
    ) as quiz:
        yield Live(quiz, chat, clock, store)
