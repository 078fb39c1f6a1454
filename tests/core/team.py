"""A quiz with team packs installed, driven the way every adapter drives it: commands
through `run_command`, clicks through `Interactions`, forms through `submit`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from bot.admin import AdminCheck, AdminStatus
from bot.bank import QuestionBank
from bot.clock import Clock
from bot.commands import Invocation, Reply, run_command
from bot.domain import ChannelRef, Platform, UserRef
from bot.features import Quiz
from bot.forms import Form, Submission, SubmitReply
from bot.imports import QuestionImport
from bot.interactions import Click, Interactions
from bot.messages import Button, Message
from bot.quiz import QuizService
from bot.review import Review
from questions.team import TeamQuestions
from tests.fakes import RecordingChat
from tests.quiz import quiz_of

GOOD = {
    "prompt": "Which node runs the nightly training job?",
    "choices": "gpu-a\ngpu-b\ngpu-c",
    "answer": "B",
    "explanation": "The nightly job is pinned to gpu-b by its node selector.",
    "details": "our-cluster, 1, https://wiki.example.com/nightly",
}


@dataclass
class TeamQuiz:
    """Every feature (as `serve` wires them), driven as an adapter drives it; who is an
    admin is `admins` (user ids)."""

    quiz: Quiz
    chat: RecordingChat
    admins: set[str] = field(default_factory=set)

    @property
    def service(self) -> QuizService:
        return self.quiz.service

    @property
    def interactions(self) -> Interactions:
        return self.quiz.interactions

    @property
    def review(self) -> Review:
        return Review(self.service, self.service.store.team)  # type: ignore[attr-defined]

    @property
    def importer(self) -> QuestionImport:
        store: Any = self.service.store
        return QuestionImport(store.team, TeamQuestions(), self.service.clock)

    def admin(self, who: UserRef) -> AdminCheck:
        async def check() -> AdminStatus:
            return AdminStatus.YES if who.user in self.admins else AdminStatus.NO

        return check

    async def run(self, channel: ChannelRef, who: UserRef, text: str) -> list[Reply]:
        settings = await self.service.store.settings.get(channel)
        inv = Invocation(channel, who, settings.locale, self.admin(who))
        return await run_command(self.quiz.commands, self.service, inv, text)

    async def click(self, button: Button, who: UserRef, channel: ChannelRef) -> Message | Form:
        click = Click.parse(button.encode(), who, channel, admin=self.admin(who))
        assert click is not None, button
        if self.quiz.interactions.opens_form(click.kind):
            return await self.quiz.interactions.open_form(click)
        return await self.quiz.interactions.click(click)

    async def fill(
        self, form: Form, values: Mapping[str, str], who: UserRef, channel: ChannelRef
    ) -> SubmitReply:
        sub = Submission.parse(form.id, values, who, channel, admin=self.admin(who))
        assert sub is not None
        return await self.quiz.interactions.submit(sub)

    async def submit(
        self, who: UserRef, channel: ChannelRef, values: Mapping[str, str] = GOOD
    ) -> SubmitReply:
        (reply,) = await self.run(channel, who, "submit")
        assert reply.form is not None
        return await self.fill(reply.form, values, who, channel)


@asynccontextmanager
async def team_quiz(
    store: Any, chat: RecordingChat, bank: QuestionBank, clock: Clock, admins: set[str]
) -> AsyncIterator[TeamQuiz]:
    chats = {platform: chat for platform in Platform}
    async with quiz_of(store, chats, bank, clock) as quiz:
        yield TeamQuiz(quiz, chat, admins)


def buttons(message: Message, kind: str) -> list[Button]:
    return [b for b in message.buttons if b.action == kind]


def text_of(replies: list[Reply]) -> str:
    return "\n".join(r.message.plain_text() for r in replies)


__all__ = ["GOOD", "TeamQuiz", "buttons", "team_quiz", "text_of"]
