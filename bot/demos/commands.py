"""The demo commands and button: `/quiz demo <id>`, `/quiz demos [auto|button|off]`, and
the reveal's "Run the demo" button (run once per question, in its thread)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from bot.commands import Admin, Command, CommandOption, Invocation, Reply
from bot.demos.dispatcher import DEMO, DemoDispatcher, SchedulePolicy
from bot.domain import DemoPolicy, Locale
from bot.errors import UserFacingError
from bot.features import ButtonKind, Feature, Parts
from bot.i18n import N_, translator
from bot.interactions import NOT_AVAILABLE, Click
from bot.messages import Message
from bot.quiz import QuizService

RUNNER_OFF = N_(
    "Demos are off on this bot (QUIZBOT_RUNNER=off); an operator can set "
    "QUIZBOT_RUNNER=local or celery."
)
POLICY_TEXT = {
    DemoPolicy.AUTO: N_("after each reveal, the question's demo runs in its thread"),
    DemoPolicy.BUTTON: N_("each reveal offers a \u201cRun the demo\u201d button"),
    DemoPolicy.OFF: N_("no demos after reveals (/quiz demo <id> still works)"),
}


def parse_params(words: Sequence[str], demo: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for word in words:
        name, sep, value = word.partition("=")
        if not sep or not name or not value:
            raise UserFacingError(
                f"{word!r} is not a demo parameter; write name=value, e.g. "
                f"/quiz demo {demo} blocks=8"
            )
        params[name] = value
    return params


def feature(parts: Parts) -> Feature:
    """`/quiz demo`, `/quiz demos`, the demo button, and the dispatcher behind them (it
    listens to reveals and resumes runs a previous process left pending)."""
    assert parts.runner is not None and parts.demos is not None, "demos need a runner"
    schedules = parts.store.schedules

    async def schedule_policy(schedule_id: int) -> DemoPolicy | None:
        schedule = await schedules.get(schedule_id)
        return schedule.demo_policy if schedule is not None else None

    policy: SchedulePolicy = schedule_policy
    dispatcher = DemoDispatcher(
        parts.service, parts.store.demo_runs, parts.runner, parts.demos, schedule_policy=policy
    )
    return demo_feature(dispatcher)


def demo_feature(dispatcher: DemoDispatcher) -> Feature:
    async def demo_clicked(click: Click, locale: Locale) -> Message:
        return await run_for_click(dispatcher, click, locale)

    return Feature(
        "demos",
        commands=demo_commands(dispatcher),
        buttons=[ButtonKind(DEMO, click=demo_clicked)],
        on_reveal=[dispatcher.on_reveal],
        services=[dispatcher],
    )


def demo_commands(dispatcher: DemoDispatcher) -> list[Command]:
    async def demo(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        t = translator(inv.locale)
        ids = dispatcher.catalog.ids()
        if not args or args[0] not in ids:
            head = t("Unknown demo {name!r}.", name=args[0]) if args else t("Which demo?")
            return [
                Reply(
                    Message(
                        body=head
                        + " "
                        + t(
                            "Demos: {ids}. Example: /quiz demo {example}",
                            ids=", ".join(ids),
                            example=ids[0] if ids else "",
                        )
                    )
                )
            ]
        if not dispatcher.enabled:
            return [Reply(Message(body=t(RUNNER_OFF)))]
        params = parse_params(args[1:], args[0])
        locale = (await service.store.settings.get(inv.channel)).locale
        await dispatcher.request(inv.channel, args[0], locale, params)
        return []

    async def demos(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        t = translator(inv.locale)
        settings = await service.store.settings.get(inv.channel)
        if not args:
            policy = settings.demo_policy
            return [
                Reply(
                    Message(
                        body=t(
                            "Demo policy here: *{policy}* — {meaning}.",
                            policy=policy.value,
                            meaning=t(POLICY_TEXT[policy]),
                        )
                        + "\n"
                        + t("Change it with /quiz demos auto|button|off (admins).")
                    )
                )
            ]
        try:
            policy = DemoPolicy(args[0].lower())
        except ValueError:
            raise UserFacingError(
                t(
                    "Unknown demo policy {value!r}: use auto, button or off. "
                    "Example: /quiz demos button",
                    value=args[0][:40],
                )
            ) from None
        await service.store.settings.save(replace(settings, demo_policy=policy))
        return [
            Reply(
                Message(
                    body=t(
                        "Demo policy here is now *{policy}* — {meaning}.",
                        policy=policy.value,
                        meaning=t(POLICY_TEXT[policy]),
                    )
                ),
                private=False,
            )
        ]

    def demo_ids(service: QuizService) -> list[str]:
        return dispatcher.catalog.ids()

    options = [
        CommandOption("id", N_("the demonstration to run"), required=True, suggest=demo_ids),
        CommandOption("parameters", N_("name=value pairs, e.g. blocks=8 (optional)")),
    ]
    policy = CommandOption(
        "policy",
        N_("auto, button or off (empty: show the current one)"),
        choices=tuple(p.value for p in DemoPolicy),
    )
    return [
        Command(
            "demo",
            demo,
            "demo <id>",
            N_("run a GPU memory demonstration"),
            options=tuple(options),
        ),
        Command(
            "demos",
            demos,
            "demos [auto|button|off]",
            N_("show or set when demos run after a reveal"),
            Admin.TO_CHANGE,
            options=(policy,),
        ),
    ]


async def run_for_click(dispatcher: DemoDispatcher, click: Click, locale: Locale) -> Message:
    """The reveal's demo button: run the question's demo once, in its thread; any later
    click (by anyone, on any replica) is told where it is."""
    t = translator(locale)
    service = dispatcher.service
    post = await service.store.posts.get(click.post_id)
    if post is None or post.channel != click.channel or post.message is None:
        return Message(body=t(NOT_AVAILABLE))
    question = await service.store.questions.get(post.question_hash)
    if question is None or question.demo is None or question.demo != click.value:
        return Message(body=t("This question has no demonstration to run."))
    if not dispatcher.enabled:
        return Message(body=t(RUNNER_OFF))
    found = await dispatcher.request_for_post(post.id, question.demo, post.locale)
    if found is None:
        return Message(body=t(NOT_AVAILABLE))
    run, created = found
    if created:
        return Message(
            body=t("Running `{demo}`: its result appears in the question's thread.", demo=run.demo)
        )
    if run.finished:
        return Message(
            body=t(
                "The `{demo}` demo already ran: its result is in the question's thread.",
                demo=run.demo,
            )
        )
    return Message(
        body=t(
            "The `{demo}` demo is already running: its result appears in the question's thread.",
            demo=run.demo,
        )
    )


__all__ = ["demo_commands", "demo_feature", "feature", "parse_params", "run_for_click"]
