"""The `/quiz` subcommands, platform-neutral.

Slack's `/quiz ask gpu`, Discord's `/quiz ask topic:gpu` and the console's `/ask gpu` all
become `run_command(service, invocation, "ask gpu")`. The result is a list of replies the
adapter shows (privately or in the channel); public questions are posted by the service.
"""

from __future__ import annotations

import difflib
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
from bot.quoting import quoted


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
        return [Reply(Message(body=_unknown(commands, name, t)))]
    return await guard(
        service.problems, f"/quiz {name}", inv.locale, _run(command, service, inv, args), _reply
    )


async def _run(
    command: Command, service: QuizService, inv: Invocation, args: list[str]
) -> list[Reply]:
    t = translator(inv.locale)
    args = _known_values(command, service, args)
    if command.needs_admin(args):
        status = await inv.admin()
        if status is not AdminStatus.YES:
            return [
                Reply(Message(body=admin_refusal(inv.channel.platform, command.name, status, t)))
            ]
    if (problem := _arguments_problem(command, service, args, t)) is not None:
        return [Reply(Message(body=problem))]
    return await command.run(service, inv, args)


def _unknown(commands: CommandSet, name: str, t: Translator) -> str:
    """ "Did you mean" for a close typo, else the list of commands."""
    close = difflib.get_close_matches(name, commands.names(), n=1, cutoff=0.6)
    if close:
        return t(
            "Unknown command {name!r}. Did you mean /quiz {command}? (/quiz help lists them all)",
            name=name,
            command=close[0],
        )
    return t("Unknown command {name!r}.", name=name) + "\n\n" + help_message(commands, t).body


def _text_options(command: Command) -> tuple[CommandOption, ...] | None:
    """The options a command's words fill, in order (files never come as words); None for
    a command that takes free text."""
    if command.options is None:
        return None
    return tuple(o for o in command.options if o.kind is not OptionKind.ATTACHMENT)


def _values(option: CommandOption, service: QuizService) -> Sequence[str]:
    return option.choices or (option.suggest(service) if option.suggest else ())


def _known_values(command: Command, service: QuizService, args: list[str]) -> list[str]:
    """Each word that names a choice or a suggested value (a topic) in another case, as
    that value: ``ask GPU`` asks topic ``gpu``."""
    out = list(args)
    for i, (option, word) in enumerate(zip(_text_options(command) or (), args, strict=False)):
        values = _values(option, service)
        if word not in values:
            folded = word.casefold()
            out[i] = next((v for v in values if v.casefold() == folded), word)
    return out


def _arguments_problem(
    command: Command, service: QuizService, args: list[str], t: Translator
) -> str | None:
    """A missing required argument, or words a command with fixed options does not take
    (its last option takes the rest when it is free text: ``demo <id> [parameters]``)."""
    options = _text_options(command)
    if options is None:
        return None
    name, usage = command.name, command.usage
    missing = [o for o in options[len(args) :] if o.required]
    if missing:
        values = list(_values(missing[0], service))
        what = t(missing[0].description)
        if values:
            return t(
                "/quiz {name} needs {what}: {values}. Example: /quiz {name} {example}",
                name=name,
                what=what,
                values=", ".join(values[:10]) + (", …" if len(values) > 10 else ""),
                example=values[0],
            )
        return t(
            "/quiz {name} needs {what}. Usage: /quiz {usage}", name=name, what=what, usage=usage
        )
    last = options[-1] if options else None
    takes_rest = last is not None and last.kind is OptionKind.STRING and not _values(last, service)
    if len(args) > len(options) and not takes_rest:
        return t(
            "/quiz {name} does not take {extra}: nothing was done. Usage: /quiz {usage}",
            name=name,
            extra=quoted(" ".join(args[len(options) :])),
            usage=usage,
        )
    return None


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
