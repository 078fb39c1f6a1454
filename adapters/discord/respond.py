"""Answering one interaction: the initial response within Discord's 3 s, then follow-ups.

A `Responder` wraps one `discord.Interaction` and serialises everything said through it,
so a deferral fired by the deadline and a reply from the core never race for the initial
response. While an interaction is handled, `current_responder` holds its responder:
`DiscordChat.send_private` answers the acting user there (ephemeral) instead of in a DM.
"""

from __future__ import annotations

import asyncio
import functools
import io
import logging
from contextvars import ContextVar
from typing import Any

import aiohttp
import discord

from adapters.discord.buttons import build_view
from adapters.discord.render import Rendered, render
from bot.messages import Message

log = logging.getLogger(__name__)

# What a failed send raises: Discord's answer (expired token, already acknowledged) or the
# connection (reset while Discord restarts a node).
SEND_ERRORS = (discord.HTTPException, aiohttp.ClientError, OSError)


@functools.lru_cache(maxsize=512)
def _rendered(message: Message) -> Rendered:
    # A burst of clicks on one question gets a handful of distinct replies (per choice and
    # locale): render each once. `Rendered` is only read from here on.
    return render(message)


def message_kwargs(message: Message) -> dict[str, Any]:
    """``embed``, ``view`` and ``files`` for `send`/`edit` calls."""
    rendered = _rendered(message)
    kwargs: dict[str, Any] = {"embed": discord.Embed.from_dict(dict(rendered.embed))}
    view = build_view(rendered)
    if view is not None:
        kwargs["view"] = view
    if message.image is not None:
        kwargs["files"] = [discord.File(io.BytesIO(message.image.data), message.image.filename)]
    return kwargs


class Responder:
    def __init__(self, interaction: discord.Interaction[Any]) -> None:
        self.interaction = interaction
        self._lock = asyncio.Lock()
        self._deferred = False
        self._original_pending = False  # a deferral whose "thinking…" is not replaced yet

    @property
    def user_id(self) -> int:
        return self.interaction.user.id

    @property
    def responded(self) -> bool:
        return self.interaction.response.is_done()

    async def defer(self) -> None:
        """Acknowledge now ("thinking…", only the user sees it); say the rest later."""
        async with self._lock:
            if not self.interaction.response.is_done():
                await self.interaction.response.defer(ephemeral=True, thinking=True)
                self._deferred = self._original_pending = True

    async def send(self, message: Message, *, private: bool = True) -> None:
        async with self._lock:
            i = self.interaction
            kwargs = message_kwargs(message)
            if not i.response.is_done():
                await i.response.send_message(ephemeral=private, **kwargs)
                return
            if self._original_pending:
                self._original_pending = False
                if private:
                    kwargs.pop("files", None)  # an edit keeps attachments out of the way
                    await i.edit_original_response(**kwargs)
                    return
                # The "thinking…" line is ephemeral; a public reply must be a new message.
                await i.delete_original_response()
            await i.followup.send(ephemeral=private, **kwargs)

    async def finish(self, acknowledgement: str) -> None:
        """Close the exchange when nothing was said: a short private line, or the
        "thinking…" line removed."""
        async with self._lock:
            i = self.interaction
            if not i.response.is_done():
                await i.response.send_message(acknowledgement, ephemeral=True)
            elif self._original_pending:
                self._original_pending = False
                await i.delete_original_response()


current_responder: ContextVar[Responder | None] = ContextVar("current_responder", default=None)


async def respond_in_time(
    responder: Responder, work: asyncio.Future[Any] | asyncio.Task[Any], deadline: float
) -> None:
    """Wait for `work` up to `deadline` seconds, then defer if nothing was sent yet, so the
    initial response always beats Discord's 3 s."""
    done, _ = await asyncio.wait({work}, timeout=deadline)
    if not done and not responder.responded:
        try:
            await responder.defer()
        except SEND_ERRORS:
            log.warning("could not defer interaction %s", responder.interaction.id)


__all__ = ["SEND_ERRORS", "Responder", "current_responder", "message_kwargs", "respond_in_time"]
