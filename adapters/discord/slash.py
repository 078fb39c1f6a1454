"""The `/quiz` application command, generated from the core's `CommandSet`: one subcommand
per command the core knows, its options from the command's `CommandOption`s (a command
that declares none takes one optional free-text option), descriptions in English with
Greek ``description_localizations`` from the gettext catalogs. Command and option names
stay English: they are what people type.

Discord cannot restrict single subcommands of a group by permission, so the group is
visible to everyone and the core decides who may run what (`CommandSet.needs_admin`);
the descriptions say which commands need Manage Server.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from adapters.discord.payloads import ATTACHMENT_OPTION
from bot.commands import Admin, Command, CommandOption, CommandSet, OptionKind
from bot.domain import Locale
from bot.i18n import N_, translator

NAME = "quiz"
DESCRIPTION = N_("Quiz questions, scores and GPU demos")
FREE_TEXT = CommandOption("arguments", N_("what follows the command, as /quiz help shows it"))
ADMIN_ONLY = N_("{description} (Manage Server)")
ADMIN_TO_CHANGE = N_("{description} (changing it: Manage Server)")

SUBCOMMAND = 1
STRING = 3
# Discord's option types for the core's `OptionKind`s.
OPTION_TYPES = {
    OptionKind.STRING: STRING,
    OptionKind.INTEGER: 4,
    OptionKind.NUMBER: 10,
    OptionKind.ATTACHMENT: ATTACHMENT_OPTION,
}
GUILD_CONTEXT = 0
DESCRIPTION_LIMIT = 100
CHOICE_LIMIT = 25
OPTION_LIMIT = 25
# Discord's locale names for the quiz's languages other than English.
DISCORD_LOCALES = {Locale.EL: "el"}


def localized(text: str, suffix: str = "") -> dict[str, Any]:
    """``description`` and, where a catalog translates it, ``description_localizations``;
    `suffix` (e.g. `ADMIN_ONLY`) wraps the translated text."""

    def describe(locale: Locale) -> str:
        t = translator(locale)
        return _fit(t(suffix, description=t(text)) if suffix else t(text))

    out: dict[str, Any] = {"description": describe(Locale.EN)}
    names = {}
    for locale, discord_name in DISCORD_LOCALES.items():
        if (translated := describe(locale)) != out["description"]:
            names[discord_name] = translated
    if names:
        out["description_localizations"] = names
    return out


def _fit(text: str) -> str:
    return text if len(text) <= DESCRIPTION_LIMIT else text[: DESCRIPTION_LIMIT - 1] + "…"


def options_of(commands: CommandSet, name: str) -> tuple[CommandOption, ...]:
    """The options a subcommand shows on Discord."""
    command = commands.get(name)
    if command is None or command.options is None:
        return (FREE_TEXT,)
    return command.options


def quiz_command(commands: CommandSet) -> dict[str, Any]:
    """The JSON of the `/quiz` command (``PUT …/commands`` takes a list of these)."""
    subcommands = [_subcommand(commands, command) for command in commands]
    if len(subcommands) > OPTION_LIMIT:
        raise ValueError(f"Discord allows {OPTION_LIMIT} subcommands; /quiz has {len(subcommands)}")
    return {
        "name": NAME,
        "type": 1,
        **localized(DESCRIPTION),
        "contexts": [GUILD_CONTEXT],
        "options": subcommands,
    }


def _subcommand(commands: CommandSet, command: Command) -> dict[str, Any]:
    text = command.description or command.usage
    if command.admin is Admin.ALWAYS:
        description = localized(text, ADMIN_ONLY)
    elif command.admin is Admin.TO_CHANGE:
        description = localized(text, ADMIN_TO_CHANGE)
    else:
        description = localized(text)
    # Discord wants the required options first.
    options = sorted(options_of(commands, command.name), key=lambda o: not o.required)
    return {
        "name": command.name,
        "type": SUBCOMMAND,
        **description,
        "options": [_option(o) for o in options],
    }


def _option(option: CommandOption) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": option.name,
        "type": OPTION_TYPES[option.kind],
        **localized(option.description),
        "required": option.required,
    }
    if option.kind in (OptionKind.INTEGER, OptionKind.NUMBER):
        for key, bound in (("min_value", option.min_value), ("max_value", option.max_value)):
            if bound is not None:
                out[key] = int(bound) if option.kind is OptionKind.INTEGER else bound
        return out
    if option.kind is OptionKind.ATTACHMENT:
        return out
    if option.choices:
        out["choices"] = [{"name": c, "value": c} for c in option.choices[:CHOICE_LIMIT]]
    elif option.suggest is not None:
        out["autocomplete"] = True
    return out


def matching(names: Iterable[str], typed: str) -> list[dict[str, str]]:
    """Autocomplete choices: names containing what was typed, prefix matches first."""
    typed = typed.strip().lower()
    found = [n for n in names if typed in n.lower()]
    found.sort(key=lambda n: (not n.lower().startswith(typed), n))
    return [{"name": n[:100], "value": n[:100]} for n in found[:CHOICE_LIMIT]]


__all__ = ["NAME", "OPTION_TYPES", "localized", "matching", "options_of", "quiz_command"]
