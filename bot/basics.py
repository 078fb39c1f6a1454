"""The commands every quiz has: `/quiz ask`, `close`, `leaderboard`, `stats`, `lang`, `help`
(the feature the others build on), and the options several features share."""

from __future__ import annotations

from dataclasses import replace

from bot.boards import USAGE as BOARD_USAGE
from bot.boards import leaderboard_command
from bot.commands import Admin, Command, CommandOption, Invocation, Reply, help_message
from bot.domain import Locale
from bot.errors import UserFacingError
from bot.features import Feature, Parts
from bot.i18n import N_, translator
from bot.messages import Message
from bot.quiz import GENERATED, QuizService
from bot.stats import stats_command
from bot.team import TEAM


def bank_topics(service: QuizService) -> list[str]:
    return service.bank.topics()


def ask_topics(service: QuizService) -> list[str]:
    """What `/quiz ask` takes besides the bank's topics: `team` where team packs are
    installed, `generated` and the generated families where they are."""
    extra = [TEAM] if service.pools.team is not None else []
    if service.generated is not None:
        extra += [GENERATED, *service.generated.names()]
    return [*service.bank.topics(), *extra]


TOPIC_OPTION = CommandOption(
    "topic", N_("a topic from the question bank (optional)"), suggest=bank_topics
)
ASK_TOPIC_OPTION = CommandOption(
    "topic", N_("a topic, or team: the team pack (optional)"), suggest=ask_topics
)
SCOPE_OPTION = CommandOption(
    "scope", N_("this channel, or the whole server/workspace"), choices=("channel", "workspace")
)
WINDOW_OPTION = CommandOption(
    "window",
    N_("day, week, month or all (default: all)"),
    choices=("day", "week", "month", "all"),
)
LANGUAGE_OPTION = CommandOption(
    "language",
    N_("the language of new questions in this channel"),
    required=True,
    choices=tuple(loc.value for loc in Locale),
)


async def _ask(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
    topic = args[0] if args else None
    await service.ask(inv.channel, topic=topic)
    return []


async def _close(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
    reveals = await service.close_channel(inv.channel)
    if not reveals:
        t = translator(inv.locale)
        return [Reply(Message(body=t("There is no open question in this channel.")))]
    return []


async def _lang(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
    t = translator(inv.locale)
    locale = Locale.parse(args[0]) if args else None
    if locale is None:
        raise UserFacingError(
            t(
                "Unknown language {value!r}: use one of {choices}. Example: /quiz lang el",
                value=args[0] if args else "",
                choices=", ".join(loc.value for loc in Locale),
            )
        )
    await service.set_locale(inv.channel, locale)
    t = translator(locale)
    return [Reply(Message(body=t("This channel's quiz language is now English.")), private=False)]


def feature(parts: Parts) -> Feature:
    commands = parts.registry.commands

    async def help_(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        return [Reply(help_message(commands, translator(inv.locale)))]

    async def stats(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        """The member's results, and what other features keep apart (live rounds)."""
        replies = await stats_command(service, inv, args)
        extra = [
            line
            for add in parts.registry.stats
            if (line := await add(inv.channel, inv.user, inv.locale))
        ]
        if not extra:
            return replies
        message = replies[0].message
        return [Reply(replace(message, body="\n\n".join([message.body, *extra])))]

    return Feature(
        "basics",
        commands=[
            Command(
                "ask",
                _ask,
                "ask [topic]",
                N_("post a question in this channel"),
                options=(ASK_TOPIC_OPTION,),
            ),
            Command(
                "close",
                _close,
                "close",
                N_("reveal the open question now"),
                Admin.ALWAYS,
                options=(),
            ),
            Command(
                "leaderboard",
                leaderboard_command,
                BOARD_USAGE,
                N_("show the channel's leaderboard"),
                options=(WINDOW_OPTION, SCOPE_OPTION),
            ),
            Command("stats", stats, "stats", N_("your own results"), options=()),
            Command(
                "lang",
                _lang,
                "lang en|el",
                N_("set this channel's language"),
                Admin.ALWAYS,
                options=(LANGUAGE_OPTION,),
            ),
            Command("help", help_, "help", N_("this list"), options=()),
        ],
    )


__all__ = [
    "ASK_TOPIC_OPTION",
    "SCOPE_OPTION",
    "TOPIC_OPTION",
    "ask_topics",
    "bank_topics",
    "feature",
]
