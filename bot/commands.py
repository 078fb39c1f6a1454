"""The `/quiz` subcommands, platform-neutral.

Slack's `/quiz ask gpu`, Discord's `/quiz ask topic:gpu` and the console's `/ask gpu` all
become `run_command(service, invocation, "ask gpu")`. The result is a list of replies the
adapter shows (privately or in the channel); public questions are posted by the service.
"""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

from bot.admin import NOBODY, AdminCheck, AdminStatus, admin_refusal
from bot.boundary import guard
from bot.domain import ChannelRef, Locale, UserRef
from bot.forms import Form
from bot.i18n import Translator, translator
from bot.messages import Message
from bot.quiz import QuizService


@dataclass(frozen=True, slots=True)
class Invocation:
    channel: ChannelRef
    user: UserRef
    locale: Locale  # the channel's locale, or the user's where the platform tells it
    admin: AdminCheck = NOBODY  # asked only when the command needs an admin


@dataclass(frozen=True, slots=True)
class Reply:
    message: Message
    private: bool = True
    # A form to open instead (Slack `views.open` with the command's trigger, Discord's
    # modal response, console prompts); `message` is the fallback where none can open.
    form: Form | None = None


Handler = Callable[[QuizService, Invocation, list[str]], Awaitable[list[Reply]]]
Suggest = Callable[[QuizService], Sequence[str]]


class OptionKind(StrEnum):
    """What an option takes, for platforms that type their options (Discord)."""

    STRING = "string"
    INTEGER = "integer"
    NUMBER = "number"
    # A file sent with the command (Discord's attachment option). It is never part of the
    # command's text: the adapter hands the file to the feature that takes it (the memory
    # clinic's snapshot); without one, the command runs as usual.
    ATTACHMENT = "attachment"


@dataclass(frozen=True, slots=True)
class CommandOption:
    """One argument of a subcommand, for platforms that show commands as forms (Discord's
    options). The command's text is still what runs: the values, in this order."""

    name: str
    description: str  # English, marked with N_; platforms translate it
    required: bool = False
    choices: tuple[str, ...] = ()  # the only values allowed
    suggest: Suggest | None = None  # values offered as the user types (autocomplete)
    kind: OptionKind = OptionKind.STRING
    min_value: float | None = None  # INTEGER and NUMBER: the range the platform enforces
    max_value: float | None = None


class Admin(StrEnum):
    """Who may run a command."""

    NO = "no"  # everyone
    ALWAYS = "always"  # admins only
    # Everyone sees the setting (`/quiz demos`); with arguments it changes it: admins only.
    TO_CHANGE = "to-change"


@dataclass(frozen=True, slots=True)
class Command:
    """A `/quiz` subcommand, as its feature declares it."""

    name: str
    run: Handler
    usage: str  # "ask [topic]", as help shows it
    description: str  # English, marked with N_ (help, Discord's command list)
    admin: Admin = Admin.NO
    # Its arguments, for platforms that show commands as forms (Discord's options); None:
    # free text. The command's text is still what runs: the values, in this order.
    options: tuple[CommandOption, ...] | None = None

    def needs_admin(self, args: list[str]) -> bool:
        return self.admin is Admin.ALWAYS or (self.admin is Admin.TO_CHANGE and bool(args))


class CommandSet:
    """The subcommands every feature registered, in registration order."""

    def __init__(self, commands: Sequence[Command] = ()) -> None:
        self._commands: dict[str, Command] = {}
        for command in commands:
            self.add(command)

    def add(self, command: Command) -> None:
        if command.name in self._commands:
            raise ValueError(f"/quiz {command.name} is registered twice")
        self._commands[command.name] = command

    def __iter__(self) -> Iterator[Command]:
        return iter(self._commands.values())

    def __contains__(self, name: object) -> bool:
        return name in self._commands

    def get(self, name: str) -> Command | None:
        return self._commands.get(name)

    def names(self) -> list[str]:
        return list(self._commands)

    def needs_admin(self, name: str, args: list[str]) -> bool:
        command = self._commands.get(name)
        return command is not None and command.needs_admin(args)


MAX_COMMAND = 2000  # longer than any real `/quiz …` (Slack's own limit is 4,000)


async def run_command(
    commands: CommandSet, service: QuizService, inv: Invocation, text: str
) -> list[Reply]:
    """Run one `/quiz` command; never raises (the error boundary words every failure)."""
    t = translator(inv.locale)
    if len(text) > MAX_COMMAND:  # before any parsing: splitting a megabyte takes seconds
        return [
            Reply(
                Message(
                    body=t(
                        "That command is {length} characters long; /quiz takes at most {limit}.",
                        length=len(text),
                        limit=MAX_COMMAND,
                    )
                )
            )
        ]
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    if not words:
        return [Reply(help_message(commands, t))]
    name, args = words[0].lower(), words[1:]
    command = commands.get(name)
    if command is None:
        return [
            Reply(
                Message(
                    body=t("Unknown command {name!r}.", name=name)
                    + "\n\n"
                    + help_message(commands, t).body
                )
            )
        ]
    return await guard(
        service.problems, f"/quiz {name}", inv.locale, _run(command, service, inv, args), _reply
    )


async def _run(
    command: Command, service: QuizService, inv: Invocation, args: list[str]
) -> list[Reply]:
    if command.needs_admin(args):
        status = await inv.admin()
        if status is not AdminStatus.YES:
            t = translator(inv.locale)
            return [
                Reply(Message(body=admin_refusal(inv.channel.platform, command.name, status, t)))
            ]
    return await command.run(service, inv, args)


def _reply(message: Message) -> list[Reply]:
    return [Reply(message)]


def help_message(commands: CommandSet, t: Translator) -> Message:
    lines = [f"`/quiz {c.usage}` — {t(c.description)}".rstrip(" —") for c in commands]
    return Message(title=t("Quiz commands"), body="\n".join(lines))


__all__ = [
    "Admin",
    "Command",
    "CommandOption",
    "CommandSet",
    "Handler",
    "Invocation",
    "OptionKind",
    "Reply",
    "help_message",
    "run_command",
]
