"""A toy feature, written the way `docs/architecture.md` ("Adding a feature") says: one
module with a command, a button kind and its handler. Tests add it through the real
registry and click it on every platform."""

from __future__ import annotations

from bot.commands import Command, Invocation, Reply
from bot.domain import Locale
from bot.features import ButtonKind, Feature, Parts
from bot.i18n import N_, translator
from bot.interactions import Click
from bot.messages import Button, Message
from bot.quiz import QuizService

KUDOS = "kudos"  # the button's kind: quiz:kudos:0:<who is thanked>


def feature(parts: Parts) -> Feature:
    async def kudos(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        t = translator(inv.locale)
        thanks = Button(t("Say thanks"), KUDOS, 0, inv.user.user)
        body = t("{name} did something great.", name=inv.user.display or inv.user.user)
        return [Reply(Message(body=body, buttons=(thanks,)), private=False)]

    async def thanked(click: Click, locale: Locale) -> Message:
        who = click.user.display or click.user.user
        return Message(body=f"{who} thanks {click.value}")

    return Feature(
        "kudos",
        commands=[Command("kudos", kudos, "kudos", N_("thank someone in the channel"))],
        buttons=[ButtonKind(KUDOS, click=thanked, about_post=False)],
    )


__all__ = ["KUDOS", "feature"]
