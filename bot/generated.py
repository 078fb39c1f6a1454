"""Generated questions in the quiz: `/quiz generated [0-100]` (the share of a channel's
picks that are generated; `/quiz ask generated` and `/quiz ask <family>` ask one now), and
typed answers — the question's "Type the number…" button opens a form with one number
field, scored right within the question's tolerance."""

from __future__ import annotations

from dataclasses import replace

from bot.commands import Admin, Command, CommandOption, Invocation, OptionKind, Reply
from bot.domain import Locale, PostState
from bot.errors import UserFacingError
from bot.features import ButtonKind, Feature, FormKind, Parts
from bot.formats import significant
from bot.forms import FieldKind, Form, FormField, Submission, SubmitReply
from bot.i18n import N_, translator
from bot.interactions import NOT_AVAILABLE, Click
from bot.messages import Message
from bot.numeric import TYPE_NUMBER, numeric_target, parse_typed
from bot.quiz import QuizService

FORM_KIND = "number"
FIELD = "value"
SHARE_OPTION = CommandOption(
    "share",
    N_("the percentage of generated questions, 0 to 100 (default 25)"),
    kind=OptionKind.INTEGER,
    min_value=0,
    max_value=100,
)
NOT_A_NUMBER = N_("{value!r} is not a number: type only the number, in {unit} (e.g. 42 or 42.5).")


def feature(parts: Parts) -> Feature:
    service = parts.service

    async def generated(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        t = translator(inv.locale)
        settings = await service.store.settings.get(inv.channel)
        if not args:
            names = ", ".join(service.generated.names()) if service.generated else "—"
            return [
                Reply(
                    Message(
                        body=t(
                            "{share}% of this channel's questions are generated (never the "
                            "same scenario twice). Families: {names}. Change it with "
                            "/quiz generated 0-100 (admins); ask one now with "
                            "/quiz ask generated.",
                            share=settings.generated_share,
                            names=names,
                        )
                    )
                )
            ]
        share = args[0].rstrip("%")
        if not share.isascii() or not share.isdigit() or not 0 <= int(share) <= 100:
            raise UserFacingError(
                t(
                    "{value!r} is not a share: use a whole number from 0 to 100. "
                    "Example: /quiz generated 25",
                    value=args[0][:20],
                )
            )
        await service.store.settings.save(replace(settings, generated_share=int(share)))
        return [
            Reply(
                Message(
                    body=t(
                        "From now on {share}% of this channel's questions are generated.",
                        share=int(share),
                    )
                ),
                private=False,
            )
        ]

    async def open_number(click: Click, locale: Locale) -> Form | Message:
        t = translator(locale)
        post = await service.store.posts.get(click.post_id)
        if post is None or post.channel != click.channel or post.state is not PostState.OPEN:
            return Message(body=t(NOT_AVAILABLE))
        question = await service.store.questions.get(post.question_hash)
        target = numeric_target(question) if question is not None else None
        if target is None:
            return Message(body=t("This question takes no typed answer: use its buttons."))
        field = FormField(
            FIELD,
            t(
                "Your prediction, in {unit} (±{tolerance} counts as right)",
                unit=target.unit,
                tolerance=significant(target.tolerance, locale),
            ),
            FieldKind.NUMBER,
            max_length=32,
            placeholder=t("a number, e.g. 42"),
        )
        return Form(FORM_KIND, post.id, "", t("Type the number"), (field,), submit=t("Answer"))

    async def submit_number(sub: Submission, locale: Locale) -> SubmitReply:
        t = translator(locale)
        text = sub.values.get(FIELD, "")
        value = parse_typed(text)
        if value is None:
            post = await service.store.posts.get(sub.post_id)
            question = await service.store.questions.get(post.question_hash) if post else None
            target = numeric_target(question) if question else None
            unit = target.unit if target else ""
            return SubmitReply(errors={FIELD: t(NOT_A_NUMBER, value=text[:32], unit=unit)})
        reply = await service.record_typed(
            sub.post_id, sub.user, value, sub.user_locale, channel=sub.channel
        )
        return SubmitReply(reply.message)

    return Feature(
        "generated",
        commands=[
            Command(
                "generated",
                generated,
                "generated [0-100]",
                N_("show or set the share of generated questions"),
                Admin.TO_CHANGE,
                options=(SHARE_OPTION,),
            )
        ],
        buttons=[ButtonKind(TYPE_NUMBER, form=open_number)],
        forms=[FormKind(FORM_KIND, submit_number)],
    )


__all__ = ["FIELD", "FORM_KIND", "feature"]
