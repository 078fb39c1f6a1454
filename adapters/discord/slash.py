"""The `/quiz` application command group, its autocomplete, and the Greek descriptions.

Each subcommand only declares its options for Discord (types, choices, autocomplete); the
callback hands the raw interaction to `InteractionHandler.command`, which rebuilds the text
(``ask gpu``) and runs the core's command set — one path for every subcommand.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import discord
from discord import app_commands
from discord.app_commands import Choice, locale_str

from bot.domain import Locale
from bot.i18n import N_, translator

Interaction = discord.Interaction[Any]
Runner = Callable[[Interaction], Awaitable[None]]
Names = Callable[[], Iterable[str]]

DESCRIPTION_LIMIT = 100
CHOICE_LIMIT = 25
WINDOWS = ("day", "week", "month", "all")
LANGUAGES = (("English", "en"), ("Ελληνικά", "el"))


def _d(text: str) -> locale_str:
    return locale_str(text)


def matching(names: Iterable[str], typed: str) -> list[Choice[str]]:
    """Autocomplete choices: names containing what was typed, prefix matches first."""
    typed = typed.strip().lower()
    found = [n for n in names if typed in n.lower()]
    found.sort(key=lambda n: (not n.lower().startswith(typed), n))
    return [Choice(name=n[:100], value=n[:100]) for n in found[:CHOICE_LIMIT]]


def quiz_group(run: Runner, topics: Names, demos: Names) -> app_commands.Group:
    group = app_commands.Group(
        name="quiz", description=_d(N_("Quiz questions, scores and GPU demos")), guild_only=True
    )

    async def topic_choices(
        interaction: discord.Interaction[Any], current: str
    ) -> list[Choice[str]]:
        return matching(topics(), current)

    async def demo_choices(
        interaction: discord.Interaction[Any], current: str
    ) -> list[Choice[str]]:
        return matching(demos(), current)

    @group.command(name="ask", description=_d(N_("post a question in this channel")))
    @app_commands.describe(topic=_d(N_("a topic from the question bank (optional)")))
    @app_commands.autocomplete(topic=topic_choices)
    async def ask(interaction: discord.Interaction[Any], topic: str | None = None) -> None:
        await run(interaction)

    @group.command(
        name="practice", description=_d(N_("a private question just for you (not scored)"))
    )
    async def practice(interaction: discord.Interaction[Any]) -> None:
        await run(interaction)

    @group.command(name="leaderboard", description=_d(N_("show the channel's leaderboard")))
    @app_commands.describe(window=_d(N_("day, week, month or all (default: all)")))
    @app_commands.choices(window=[Choice(name=w, value=w) for w in WINDOWS])
    async def leaderboard(
        interaction: discord.Interaction[Any], window: Choice[str] | None = None
    ) -> None:
        await run(interaction)

    @group.command(name="stats", description=_d(N_("your own results")))
    async def stats(interaction: discord.Interaction[Any]) -> None:
        await run(interaction)

    @group.command(name="lang", description=_d(N_("set this channel's language")))
    @app_commands.describe(language=_d(N_("the language of new questions in this channel")))
    @app_commands.choices(language=[Choice(name=n, value=v) for n, v in LANGUAGES])
    async def lang(interaction: discord.Interaction[Any], language: Choice[str]) -> None:
        await run(interaction)

    @group.command(name="demo", description=_d(N_("run a GPU memory demonstration")))
    @app_commands.describe(id=_d(N_("the demonstration to run")))
    @app_commands.autocomplete(id=demo_choices)
    async def demo(interaction: discord.Interaction[Any], id: str) -> None:
        await run(interaction)

    @group.command(name="help", description=_d(N_("this list")))
    async def help_(interaction: discord.Interaction[Any]) -> None:
        await run(interaction)

    @group.command(
        name="schedule", description=_d(N_("daily questions for this channel (Manage Server)"))
    )
    @app_commands.describe(settings=_d(N_("options as /quiz help lists them, e.g. 09:30 mon-fri")))
    async def schedule(interaction: discord.Interaction[Any], settings: str | None = None) -> None:
        await run(interaction)

    @group.command(name="close", description=_d(N_("reveal the open question now (Manage Server)")))
    async def close(interaction: discord.Interaction[Any]) -> None:
        await run(interaction)

    return group


class DescriptionTranslator(app_commands.Translator):
    """Greek descriptions from the gettext catalogs (sent as ``description_localizations``).
    Command and option names stay English: they are what people type."""

    _TRANSLATED = frozenset(
        {
            app_commands.TranslationContextLocation.command_description,
            app_commands.TranslationContextLocation.group_description,
            app_commands.TranslationContextLocation.parameter_description,
        }
    )

    async def translate(
        self,
        string: locale_str,
        locale: discord.Locale,
        context: app_commands.TranslationContextTypes,
    ) -> str | None:
        ours = Locale.parse(locale.value)
        if ours is None or ours is Locale.EN or context.location not in self._TRANSLATED:
            return None
        text = translator(ours)(string.message)
        return text[:DESCRIPTION_LIMIT] if text != string.message else None


__all__ = ["DescriptionTranslator", "matching", "quiz_group"]
