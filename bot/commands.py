"""The `/quiz` subcommands, platform-neutral.

Slack's `/quiz ask gpu`, Discord's `/quiz ask topic:gpu` and the console's `/ask gpu` all
become `run_command(service, invocation, "ask gpu")`. The result is a list of replies the
adapter shows (privately or in the channel); public questions are posted by the service.
"""

from __future__ import annotations

import difflib
import logging
import shlex
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from bot.domain import ChannelRef, Locale, Platform, UserRef
from bot.errors import StorageUnavailable, UserFacingError
from bot.forms import Form
from bot.i18n import N_, Translator, translator
from bot.logs import problem_key
from bot.messages import Message
from bot.quiz import GENERATED, QuizService
from bot.quoting import quoted
from bot.team import TEAM

log = logging.getLogger(__name__)


class AdminStatus(StrEnum):
    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"  # the platform could not say (its API did not answer)


AdminCheck = Callable[[], Awaitable[AdminStatus]]
"""An adapter's capability: is the invoking user an admin? Asked only for admin commands."""


@dataclass(frozen=True, slots=True)
class Invocation:
    channel: ChannelRef
    user: UserRef
    locale: Locale  # the channel's locale, or the user's where the platform tells it
    is_admin: bool = False
    admin_check: AdminCheck | None = None  # when set, it decides (and `is_admin` is ignored)

    async def admin_status(self) -> AdminStatus:
        if self.admin_check is not None:
            return await self.admin_check()
        return AdminStatus.YES if self.is_admin else AdminStatus.NO


# Who counts as an admin, in each platform's words.
NOT_ADMIN = {
    Platform.SLACK: N_(
        "Only workspace admins (or users listed in QUIZBOT_ADMINS) can use /quiz {name}."
    ),
    Platform.DISCORD: N_(
        "Only members with the Manage Server permission (or the quiz admin role) can use "
        "/quiz {name}."
    ),
    Platform.CONSOLE: N_("Only admins (users listed in QUIZBOT_ADMINS) can use /quiz {name}."),
}
ADMIN_UNKNOWN = N_(
    "I could not check whether you are an admin ({platform} did not answer), so /quiz {name} "
    "did not run. Try again in a moment; an operator can also add your user id to "
    "QUIZBOT_ADMINS."
)
FAILED = N_("Something went wrong on our side; please try again in a moment.")
STORAGE_DOWN = N_("The quiz's database is not answering right now; please try again in a moment.")


def failure_message(locale: Locale, exc: BaseException | None = None) -> Message:
    """The one "it did not work" reply, for every platform."""
    t = translator(locale)
    return Message(body=t(STORAGE_DOWN if isinstance(exc, StorageUnavailable) else FAILED))


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


@dataclass(slots=True)
class CommandSet:
    """Subcommand name -> handler. Later features register theirs (schedule, demo, ...)."""

    handlers: dict[str, Handler] = field(default_factory=dict)
    admin_only: set[str] = field(default_factory=set)
    # Admin only when given arguments: the bare command shows a setting, with arguments
    # it changes it (`/quiz demos` vs `/quiz demos off`).
    admin_to_change: set[str] = field(default_factory=set)
    usage: dict[str, str] = field(default_factory=dict)
    # The arguments of each subcommand that declares them (`CommandOption`); a subcommand
    # without an entry takes free text.
    options: dict[str, tuple[CommandOption, ...]] = field(default_factory=dict)

    def add(
        self,
        name: str,
        handler: Handler,
        usage: str,
        *,
        admin: bool = False,
        admin_args_only: bool = False,
        options: Sequence[CommandOption] | None = None,
    ) -> None:
        self.handlers[name] = handler
        self.usage[name] = usage
        if options is not None:
            self.options[name] = tuple(options)
        if admin and admin_args_only:
            self.admin_to_change.add(name)
        elif admin:
            self.admin_only.add(name)

    def needs_admin(self, name: str, args: list[str]) -> bool:
        return name in self.admin_only or (name in self.admin_to_change and bool(args))

    @staticmethod
    def description(name: str) -> str:
        """What a subcommand does, in English (marked for translation); "" when unknown."""
        return _DESCRIPTIONS.get(name, "")


MAX_COMMAND = 2000  # longer than any real `/quiz …` (Slack's own limit is 4,000)


async def run_command(
    commands: CommandSet, service: QuizService, inv: Invocation, text: str
) -> list[Reply]:
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
    handler = commands.handlers.get(name)
    if handler is None:
        return [Reply(Message(body=_unknown(commands, name, t)))]
    try:
        args = _known_values(commands, service, name, args)
        if commands.needs_admin(name, args):
            status = await inv.admin_status()
            if status is not AdminStatus.YES:
                return [Reply(Message(body=_refusal(inv, name, status, t)))]
        if (problem := _arguments_problem(commands, service, name, args, t)) is not None:
            return [Reply(Message(body=problem))]
        return await handler(service, inv, args)
    except UserFacingError as exc:
        return [Reply(Message(body=str(exc)))]
    except Exception as exc:
        service.problems.problem(
            problem_key(f"/quiz {name}", exc),
            "/quiz %s failed in %s",
            name,
            inv.channel.key,
            exc=exc,
        )
        return [Reply(failure_message(inv.locale, exc))]


def _unknown(commands: CommandSet, name: str, t: Translator) -> str:
    """ "Did you mean" for a close typo, else the list of commands."""
    close = difflib.get_close_matches(name, list(commands.handlers), n=1, cutoff=0.6)
    if close:
        return t(
            "Unknown command {name!r}. Did you mean /quiz {command}? (/quiz help lists them all)",
            name=name,
            command=close[0],
        )
    return t("Unknown command {name!r}.", name=name) + "\n\n" + help_message(commands, t).body


def _text_options(commands: CommandSet, name: str) -> tuple[CommandOption, ...] | None:
    """The options a command's words fill, in order (files never come as words); None for
    a command that takes free text."""
    options = commands.options.get(name)
    if options is None:
        return None
    return tuple(o for o in options if o.kind is not OptionKind.ATTACHMENT)


def _values(option: CommandOption, service: QuizService) -> Sequence[str]:
    return option.choices or (option.suggest(service) if option.suggest else ())


def _known_values(
    commands: CommandSet, service: QuizService, name: str, args: list[str]
) -> list[str]:
    """Each word that names a choice or a suggested value (a topic) in another case, as
    that value: ``ask GPU`` asks topic ``gpu``."""
    options = _text_options(commands, name) or ()
    out = list(args)
    for i, (option, word) in enumerate(zip(options, args, strict=False)):
        values = _values(option, service)
        if word not in values:
            folded = word.casefold()
            out[i] = next((v for v in values if v.casefold() == folded), word)
    return out


def _arguments_problem(
    commands: CommandSet, service: QuizService, name: str, args: list[str], t: Translator
) -> str | None:
    """A missing required argument, or words a command with fixed options does not take
    (its last option takes the rest when it is free text: ``demo <id> [parameters]``)."""
    options = _text_options(commands, name)
    if options is None:
        return None
    usage = commands.usage[name]
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


def _refusal(inv: Invocation, name: str, status: AdminStatus, t: Translator) -> str:
    return admin_refusal(inv.channel.platform, name, status, t)


def admin_refusal(platform: Platform, name: str, status: AdminStatus, t: Translator) -> str:
    """Why an admin-only command or button did not run, in the platform's words."""
    if status is AdminStatus.UNKNOWN:
        return t(ADMIN_UNKNOWN, platform=platform.value.capitalize(), name=name)
    return t(NOT_ADMIN.get(platform, NOT_ADMIN[Platform.CONSOLE]), name=name)


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
    "demos": N_("show or set when demos run after a reveal"),
    "generated": N_("show or set the share of generated questions"),
    "schedule": N_("daily questions for this channel"),
    "report": N_("per-question statistics for admins"),
    "submit": N_("write a question for the team pack"),
    "review": N_("approve or reject submitted questions, see reported ones (admins)"),
    "retire": N_("never ask a question again in this workspace (admins)"),
    "packs": N_("show or set which question packs this channel gets"),
    "mydata": N_("get a file of everything the quiz stores about you"),
    "forget-me": N_("erase your answers and scores, and leave every board"),
    "import": N_("import a question file into the team pack (admins)"),
    "clinic": N_("check your PyTorch memory snapshot under other allocator settings"),
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


def core_commands() -> CommandSet:
    """The commands of the core quiz (the foundation)."""
    cs = CommandSet()
    cs.add("ask", _ask, "ask [topic]", options=[ASK_TOPIC_OPTION])
    cs.add("close", _close, "close", admin=True, options=[])
    # Boards and stats live in their own modules (imported here: they import this one).
    from bot.boards import USAGE as BOARD_USAGE
    from bot.boards import leaderboard_command
    from bot.stats import stats_command

    window = CommandOption(
        "window",
        N_("day, week, month or all (default: all)"),
        choices=("day", "week", "month", "all"),
    )
    cs.add("leaderboard", leaderboard_command, BOARD_USAGE, options=[window, SCOPE_OPTION])
    cs.add("stats", stats_command, "stats", options=[])
    language = CommandOption(
        "language",
        N_("the language of new questions in this channel"),
        required=True,
        choices=tuple(loc.value for loc in Locale),
    )
    cs.add("lang", _lang, "lang en|el", admin=True, options=[language])

    async def help_(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        return [Reply(help_message(cs, translator(inv.locale)))]

    cs.add("help", help_, "help", options=[])
    return cs


__all__ = [
    "AdminCheck",
    "AdminStatus",
    "CommandOption",
    "CommandSet",
    "Invocation",
    "OptionKind",
    "Reply",
    "admin_refusal",
    "core_commands",
    "failure_message",
    "run_command",
]
