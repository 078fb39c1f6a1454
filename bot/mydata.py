"""A member's own data: `/quiz mydata` sends them a private JSON file of everything stored
about them; `/quiz forget-me` (with a confirm button only they can press) erases it —
answers and practice deleted, removed from every board and aggregate, submissions and
reports kept without their name. Operators do the same with `quizbot member`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from bot.commands import Command, Invocation, Reply
from bot.domain import Locale, UserRef
from bot.features import ButtonKind, Feature, Parts
from bot.i18n import N_, translator
from bot.interactions import Click
from bot.messages import Attachment, Button, ButtonStyle, Message
from bot.ports import PrivateFiles
from bot.quiz import QuizService
from bot.team import member_digest


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What an erasure removed (counts), for the member and the operator."""

    members: int = 0
    answers: int = 0
    practice_cards: int = 0
    submissions: int = 0  # kept, now without an author
    flags: int = 0  # kept, now without a reporter


class MemberData(Protocol):
    async def export(self, user: UserRef) -> dict[str, Any]:
        """Everything stored about `user`, as plain data."""
        ...

    async def forget(self, user: UserRef) -> Forgotten:
        """Erase `user`: their answers and practice cards are deleted, every aggregate
        and board loses them, their submissions and reports lose their name."""
        ...


def export_file(user: UserRef, data: dict[str, Any]) -> Attachment:
    text = json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True, default=str)
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in user.user)[:40]
    return Attachment(f"quizbot-data-{user.platform}-{safe}.json", text.encode(), title="quizbot")


FORGET = "forget"  # post 0; value: whose data (a digest of the member): confirms erasure


def feature(parts: Parts) -> Feature:
    members = parts.store.members

    async def mydata(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        t = translator(inv.locale)
        chat = service.chat(inv.channel)
        if not isinstance(chat, PrivateFiles):
            who = f"{inv.user.platform}:{inv.user.workspace}:{inv.user.user}"
            return [
                Reply(
                    Message(
                        body=t(
                            "This platform cannot receive files from the quiz yet; an "
                            "operator can export your data with: quizbot member export {who}",
                            who=who,
                        )
                    )
                )
            ]
        data = await members.export(inv.user)
        await chat.send_file(
            inv.channel,
            inv.user,
            export_file(inv.user, data),
            t("Everything the quiz stores about you."),
        )
        return [
            Reply(
                Message(
                    body=t(
                        "I sent you a file with everything the quiz stores about you: answers, "
                        "scores, streaks, practice, submitted questions and reports. To erase "
                        "it: /quiz forget-me"
                    )
                )
            )
        ]

    async def forget_me(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        t = translator(inv.locale)
        button = Button(t("Erase my data"), FORGET, 0, member_digest(inv.user), ButtonStyle.DANGER)
        body = t(
            "This erases your answers, scores, streaks and practice in this workspace and "
            "takes you off every board; questions you submitted stay, without your name. "
            "It cannot be undone. Get a copy first with /quiz mydata."
        )
        return [Reply(Message(title=t("Erase your data?"), body=body, buttons=(button,)))]

    async def confirmed(click: Click, locale: Locale) -> Message:
        t = translator(locale)
        if click.value != member_digest(click.user):
            return Message(
                body=t(
                    "This button belongs to someone else: only they can erase their own data. "
                    "To erase yours: /quiz forget-me"
                )
            )
        done = await members.forget(click.user)
        if not done.members:
            return Message(body=t("The quiz stores nothing about you: nothing to erase."))
        return Message(
            body=t.n(
                "Done: {count} answer and {cards} practice cards are erased and you are off "
                "every board. Questions you submitted stay, without your name.",
                "Done: {count} answers and {cards} practice cards are erased and you are off "
                "every board. Questions you submitted stay, without your name.",
                done.answers,
                cards=done.practice_cards,
            )
        )

    return Feature(
        "mydata",
        commands=[
            Command(
                "mydata",
                mydata,
                "mydata",
                N_("get a file of everything the quiz stores about you"),
                options=(),
            ),
            Command(
                "forget-me",
                forget_me,
                "forget-me",
                N_("erase your answers and scores, and leave every board"),
                options=(),
            ),
        ],
        buttons=[ButtonKind(FORGET, click=confirmed, about_post=False)],
    )


__all__ = ["FORGET", "Forgotten", "MemberData", "export_file", "feature"]
