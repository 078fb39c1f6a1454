"""A quiz with team packs installed, driven the way every adapter drives it: commands
through `run_command`, clicks through `Interactions`, forms through `submit`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.commands import AdminStatus, CommandSet, Invocation, Reply, core_commands, run_command
from bot.domain import ChannelRef, Platform, UserRef
from bot.flags import install_flags
from bot.forms import Form, Submission, SubmitReply
from bot.imports import QuestionImport
from bot.interactions import Click, Interactions
from bot.messages import ActionKind, Button, Message
from bot.mydata import install_mydata
from bot.packs import install_packs
from bot.pools import QuestionPools
from bot.practice import install_practice
from bot.quiz import QuizService
from bot.report import add_report_command
from bot.review import Review, install_review
from bot.submit import install_submit
from questions.team import TeamQuestions
from tests.fakes import RecordingChat

GOOD = {
    "prompt": "Which node runs the nightly training job?",
    "choices": "gpu-a\ngpu-b\ngpu-c",
    "answer": "B",
    "explanation": "The nightly job is pinned to gpu-b by its node selector.",
    "details": "our-cluster, 1, https://wiki.example.com/nightly",
}


@dataclass
class TeamQuiz:
    service: QuizService
    chat: RecordingChat
    commands: CommandSet
    interactions: Interactions
    review: Review
    importer: QuestionImport
    admins: set[str] = field(default_factory=set)

    async def run(self, channel: ChannelRef, who: UserRef, text: str) -> list[Reply]:
        settings = await self.service.store.settings.get(channel)
        inv = Invocation(channel, who, settings.locale, admin_check=lambda: self.admin_status(who))
        return await run_command(self.commands, self.service, inv, text)

    async def admin_status(self, who: UserRef) -> AdminStatus:
        return AdminStatus.YES if who.user in self.admins else AdminStatus.NO

    async def click(self, button: Button, who: UserRef, channel: ChannelRef) -> Message | Form:
        click = Click.parse(button.encode(), who, channel)
        assert click is not None, button
        if self.interactions.opens_form(click.kind):
            return await self.interactions.open_form(click)
        return await self.interactions.click(click)

    async def fill(
        self, form: Form, values: Mapping[str, str], who: UserRef, channel: ChannelRef
    ) -> SubmitReply:
        sub = Submission.parse(form.id, values, who, channel)
        assert sub is not None
        return await self.interactions.submit(sub)

    async def submit(
        self, who: UserRef, channel: ChannelRef, values: Mapping[str, str] = GOOD
    ) -> SubmitReply:
        (reply,) = await self.run(channel, who, "submit")
        assert reply.form is not None
        return await self.fill(reply.form, values, who, channel)


def install_team(
    cs: CommandSet, interactions: Interactions, service: QuizService
) -> tuple[Review, QuestionImport]:
    """Everything the composition root installs for team packs, on the SQL store."""
    store: Any = service.store
    service.pools = QuestionPools(service.bank, store.team)
    formats = TeamQuestions()
    review = install_review(cs, interactions, service, store.team)
    install_submit(cs, interactions, service, store.team, formats, review)
    install_flags(interactions, service, store.team)
    install_packs(cs)
    install_mydata(cs, interactions, service, store.members)
    install_practice(service, cs, store.practice)
    add_report_command(cs, store.reports)
    return review, QuestionImport(store.team, formats, service.clock)


def team_quiz(service: QuizService, chat: RecordingChat, admins: set[str]) -> TeamQuiz:
    cs = core_commands()
    interactions = Interactions(service)
    review, importer = install_team(cs, interactions, service)
    quiz = TeamQuiz(service, chat, cs, interactions, review, importer, admins)
    for platform in Platform:
        interactions.set_admin_check(platform, quiz.admin_status)
    return quiz


def buttons(message: Message, kind: ActionKind) -> list[Button]:
    return [b for b in message.buttons if b.action is kind]


def text_of(replies: list[Reply]) -> str:
    return "\n".join(r.message.plain_text() for r in replies)


__all__ = ["GOOD", "TeamQuiz", "buttons", "install_team", "team_quiz", "text_of"]
