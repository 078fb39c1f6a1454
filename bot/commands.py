"""The `/quiz` subcommands, platform-neutral.

Slack's `/quiz ask gpu`, Discord's `/quiz ask topic:gpu` and the console's `/ask gpu` all
become `run_command(service, invocation, "ask gpu")`. The result is a list of replies the
adapter shows (privately or in the channel); public questions are posted by the service.
"""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot.domain import ChannelRef, Locale, UserRef
from bot.errors import UserFacingError
from bot.i18n import N_, Translator, translator
from bot.messages import Message
from bot.quiz import QuizService


@dataclass(frozen=True, slots=True)
class Invocation:
    channel: ChannelRef
    user: UserRef
    locale: Locale  # the channel's locale, or the user's where the platform tells it
    is_admin: bool = False


@dataclass(frozen=True, slots=True)
class Reply:
    message: Message
    private: bool = True


Handler = Callable[[QuizService, Invocation, list[str]], Awaitable[list[Reply]]]


@dataclass(slots=True)
class CommandSet:
    """Subcommand name -> handler. Later features register theirs (schedule, demo, ...)."""

    handlers: dict[str, Handler] = field(default_factory=dict)
    admin_only: set[str] = field(default_factory=set)
    usage: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, handler: Handler, usage: str, *, admin: bool = False) -> None:
        self.handlers[name] = handler
        self.usage[name] = usage
        if admin:
            self.admin_only.add(name)


async def run_command(
    commands: CommandSet, service: QuizService, inv: Invocation, text: str
) -> list[Reply]:
    t = translator(inv.locale)
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    if not words:
        return [Reply(help_message(commands, t))]
    name, args = words[0].lower(), words[1:]
    handler = commands.handlers.get(name)
    if handler is None:
        return [
            Reply(
                Message(
                    body=t("Unknown command {name!r}.", name=name)
                    + "\n\n"
                    + help_message(commands, t).body
                )
            )
        ]
    if name in commands.admin_only and not inv.is_admin:
        return [
            Reply(
                Message(
                    body=t(
                        "Only workspace admins (or users listed in QUIZBOT_ADMINS) "
                        "can use /quiz {name}.",
                        name=name,
                    )
                )
            )
        ]
    try:
        return await handler(service, inv, args)
    except UserFacingError as exc:
        return [Reply(Message(body=str(exc)))]


def help_message(commands: CommandSet, t: Translator) -> Message:
    lines = [
        f"`/quiz {commands.usage[n]}` — {t(_DESCRIPTIONS.get(n, ''))}".rstrip(" —")
        for n in commands.handlers
    ]
    return Message(title=t("Quiz commands"), body="\n".join(lines))


_DESCRIPTIONS = {
    "ask": N_("post a question in this channel"),
    "close": N_("reveal the open question now"),
    "leaderboard": N_("show the channel's leaderboard"),
    "stats": N_("your own results"),
    "lang": N_("set this channel's language"),
    "help": N_("this list"),
    "practice": N_("a private question just for you (not scored)"),
    "demo": N_("run a GPU memory demonstration"),
    "schedule": N_("daily questions for this channel"),
    "report": N_("per-question statistics for admins"),
}


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


def core_commands() -> CommandSet:
    """The commands of the core quiz (the foundation)."""
    cs = CommandSet()
    cs.add("ask", _ask, "ask [topic]")
    cs.add("close", _close, "close", admin=True)
    # Boards and stats live in their own modules (imported here: they import this one).
    from bot.boards import USAGE as BOARD_USAGE
    from bot.boards import leaderboard_command
    from bot.stats import stats_command

    cs.add("leaderboard", leaderboard_command, BOARD_USAGE)
    cs.add("stats", stats_command, "stats")
    cs.add("lang", _lang, "lang en|el", admin=True)

    async def help_(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        return [Reply(help_message(cs, translator(inv.locale)))]

    cs.add("help", help_, "help")
    return cs


__all__ = ["CommandSet", "Invocation", "Reply", "core_commands", "run_command"]
