"""Persistent buttons: the `custom_id` carries the post and the choice, and a
`discord.ui.DynamicItem` per action parses it back on every click — so a click on a message
posted before a restart (or by another replica) reaches the handler of whichever process
receives it. Nothing is kept in memory per message.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Protocol

import discord

from adapters.discord.render import Rendered, RenderedButton

log = logging.getLogger(__name__)

ANSWER_TEMPLATE = r"quiz:answer:(?P<post>\d+):(?P<choice>\d+)"
DEMO_TEMPLATE = r"quiz:demo:(?P<post>\d+):(?P<demo>[\w.\-]+)"
_ANSWER = re.compile(ANSWER_TEMPLATE)
_DEMO = re.compile(DEMO_TEMPLATE)


class ClickHandler(Protocol):
    async def answer_clicked(
        self, interaction: discord.Interaction[Any], post_id: int, choice: int
    ) -> None: ...

    async def demo_clicked(
        self, interaction: discord.Interaction[Any], post_id: int, demo: str
    ) -> None: ...


class QuizClient(discord.Client):
    """A `discord.Client` that knows the adapter's click handler."""

    def __init__(self, handler: ClickHandler, **options: Any) -> None:
        super().__init__(**options)
        self.click_handler = handler

    async def on_interaction(self, interaction: discord.Interaction[Any]) -> None:
        await route_unmatched_click(self.click_handler, interaction)


class ShardedQuizClient(discord.AutoShardedClient):
    """The same, sharded (`QUIZBOT_DISCORD_SHARD_COUNT`)."""

    def __init__(self, handler: ClickHandler, **options: Any) -> None:
        super().__init__(**options)
        self.click_handler = handler

    async def on_interaction(self, interaction: discord.Interaction[Any]) -> None:
        await route_unmatched_click(self.click_handler, interaction)


async def route_unmatched_click(
    handler: ClickHandler, interaction: discord.Interaction[Any]
) -> None:
    """A quiz button clicked on a message that no longer shows it (the question closed
    and lost its buttons a moment before the click) never reaches a `DynamicItem`, which
    needs the button in the message. Route it here, so it too gets its clear line."""
    if interaction.type is not discord.InteractionType.component or interaction.data is None:
        return
    custom_id = str(interaction.data.get("custom_id", ""))
    if not custom_id.startswith("quiz:") or _shown(interaction.message, custom_id):
        return
    if m := _ANSWER.fullmatch(custom_id):
        await handler.answer_clicked(interaction, int(m["post"]), int(m["choice"]))
    elif m := _DEMO.fullmatch(custom_id):
        await handler.demo_clicked(interaction, int(m["post"]), m["demo"])


def _shown(message: discord.Message | None, custom_id: str) -> bool:
    if message is None:
        return False
    for row in message.components:
        for child in getattr(row, "children", ()):
            if getattr(child, "custom_id", None) == custom_id:
                return True
    return False


def _handler(interaction: discord.Interaction[Any]) -> ClickHandler | None:
    client = interaction.client
    if isinstance(client, QuizClient | ShardedQuizClient):
        return client.click_handler
    log.error("a quiz button was clicked on a client without a quiz handler")
    return None


def _button(b: RenderedButton) -> discord.ui.Button[discord.ui.View]:
    return discord.ui.Button(
        label=b.label, custom_id=b.custom_id, style=discord.ButtonStyle(b.style), row=b.row
    )


class AnswerButton(
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]], template=ANSWER_TEMPLATE
):
    def __init__(self, item: discord.ui.Button[discord.ui.View], post_id: int, choice: int):
        super().__init__(item)
        self.post_id = post_id
        self.choice = choice

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> AnswerButton:
        assert isinstance(item, discord.ui.Button)
        return cls(item, int(match["post"]), int(match["choice"]))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        if (handler := _handler(interaction)) is not None:
            await handler.answer_clicked(interaction, self.post_id, self.choice)


class DemoButton(
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]], template=DEMO_TEMPLATE
):
    def __init__(self, item: discord.ui.Button[discord.ui.View], post_id: int, demo: str):
        super().__init__(item)
        self.post_id = post_id
        self.demo = demo

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> DemoButton:
        assert isinstance(item, discord.ui.Button)
        return cls(item, int(match["post"]), match["demo"])

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        if (handler := _handler(interaction)) is not None:
            await handler.demo_clicked(interaction, self.post_id, self.demo)


DYNAMIC_ITEMS: tuple[type[discord.ui.DynamicItem[Any]], ...] = (AnswerButton, DemoButton)


def build_view(rendered: Rendered) -> discord.ui.View | None:
    """A `timeout=None` view of the rendered buttons; None when there are none (an edit
    with ``view=None`` removes the buttons of a closed question)."""
    if not rendered.buttons:
        return None
    view = discord.ui.View(timeout=None)
    for b in rendered.buttons:
        button = _button(b)
        if m := _ANSWER.fullmatch(b.custom_id):
            view.add_item(AnswerButton(button, int(m["post"]), int(m["choice"])))
        elif m := _DEMO.fullmatch(b.custom_id):
            view.add_item(DemoButton(button, int(m["post"]), m["demo"]))
        else:
            view.add_item(button)
    return view
