"""Saying things about one interaction: the initial response bodies, and what follows it
through the interaction's webhook (edit or delete the original response, follow-ups).

Discord takes exactly one initial response per interaction, within 3 s: the reply itself
(type 4), a deferral ("thinking…", type 5) that a later ``PATCH …/@original`` replaces,
autocomplete choices (type 8) or, over HTTP, a PONG (type 1). Everything after it goes
through ``/webhooks/<application>/<token>``, valid for 15 minutes.

`PrivateLine` lets `DiscordChat.send_private` keep a private reply private while an
interaction of that user is being handled: the reply joins the interaction's own replies
(ephemeral), instead of becoming a DM.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from adapters.discord.payloads import Target
from adapters.discord.render import image_attachment, message_json
from adapters.discord.rest import DiscordError, DiscordRest
from bot.commands import Reply
from bot.domain import Locale
from bot.errors import PlatformError
from bot.messages import Message

log = logging.getLogger(__name__)

EPHEMERAL = 1 << 6
PONG: dict[str, Any] = {"type": 1}
DEFERRED_PRIVATE: dict[str, Any] = {"type": 5, "data": {"flags": EPHEMERAL}}
UNKNOWN_WEBHOOK = 10015  # the initial response is not registered yet (HTTP mode), or gone
# The initial response has a deadline: a 429 or a dropped connection is retried, briefly.
RESPOND_ATTEMPTS = 3
RESPOND_MAX_WAIT = 1.0


def message_data(message: Message, *, private: bool) -> dict[str, Any]:
    """A message as interaction data; an image (an attachment) is left out: replies carry
    none, and an embed pointing at a missing attachment shows broken."""
    data = message_json(replace(message, image=None) if message.image else message)
    if private:
        data["flags"] = EPHEMERAL
    return data


def reply_response(message: Message, *, private: bool = True) -> dict[str, Any]:
    return {"type": 4, "data": message_data(message, private=private)}


def choices_response(choices: list[dict[str, str]]) -> dict[str, Any]:
    return {"type": 8, "data": {"choices": choices}}


class Webhook:
    """One interaction's answers over REST. Each call returns whether Discord took it; a
    refusal (an expired token, an answer already given) is logged by the client."""

    def __init__(self, rest: DiscordRest, target: Target) -> None:
        self.rest = rest
        self.target = target
        self._path = f"/webhooks/{target.application_id}/{target.token}"

    async def respond(self, body: dict[str, Any]) -> bool:
        """The initial response (gateway mode: over HTTP it is the request's answer)."""
        path = f"/interactions/{self.target.id}/{self.target.token}/callback"
        return await self._call(
            "POST", path, body, attempts=RESPOND_ATTEMPTS, max_retry_after=RESPOND_MAX_WAIT
        )

    async def edit_original(self, message: Message, *, private: bool = True) -> bool:
        data = message_data(message, private=private)
        data.pop("flags", None)  # an edit keeps the original's flags
        return await self._call("PATCH", f"{self._path}/messages/@original", data)

    async def edit_original_with_image(self, message: Message) -> bool:
        """Replace the original with `message` and its image attached (multipart:
        ``payload_json`` and ``files[0]``), shown in the embed."""
        if message.image is None:
            return await self.edit_original(message)
        image = message.image
        data = {**message_json(message), "attachments": [image_attachment(image)]}
        return await self._call(
            "PATCH",
            f"{self._path}/messages/@original",
            data,
            files=[(image.filename, image.data)],
        )

    async def delete_original(self) -> bool:
        return await self._call("DELETE", f"{self._path}/messages/@original")

    async def follow_up(self, message: Message, *, private: bool) -> bool:
        return await self._call("POST", self._path, message_data(message, private=private))

    async def say_after_deferral(self, replies: list[Reply]) -> None:
        """Replace "thinking…" with the first reply (a public one cannot: the deferral is
        private, so it is removed and the reply follows in the channel); the rest follow."""
        if not replies:
            await self.delete_original()
            return
        first, *rest = replies
        if first.private:
            await self.edit_original(first.message)
        else:
            await self.delete_original()
            await self.follow_up(first.message, private=False)
        await self.follow_ups(rest)

    async def follow_ups(self, replies: list[Reply]) -> None:
        for reply in replies:
            await self.follow_up(reply.message, private=reply.private)

    async def _call(
        self, method: str, path: str, body: dict[str, Any] | None = None, **options: Any
    ) -> bool:
        for attempt in (1, 2):
            try:
                await self.rest.call(method, path, body, **options)
                return True
            except DiscordError as exc:
                # Over HTTP, Discord may not have registered the initial response yet when
                # the first follow-up arrives: once more, a moment later.
                if exc.code != UNKNOWN_WEBHOOK or attempt == 2 or "/webhooks/" not in path:
                    return False
                await asyncio.sleep(0.25)
            except PlatformError:
                return False
        return False


class DeferredReply:
    """An interaction's deferred private reply ("thinking…"), edited in place as work goes
    on: `status` shows a line, `result` the final message, with its image attached (the
    memory clinic's progress and report: a `bot.clinic_flow.ClinicDelivery`)."""

    def __init__(self, webhook: Webhook) -> None:
        self.webhook = webhook

    async def status(self, message: Message) -> None:
        await self.webhook.edit_original(message)

    async def result(self, message: Message) -> None:
        await self.webhook.edit_original_with_image(message)


class PrivateLine:
    """The acting user's private line while their interaction is handled: messages wait
    for the interaction's replies until `close`, then follow up (ephemeral) directly.
    `locale` is the language the interaction is answered in (asked only when needed)."""

    def __init__(
        self, user_id: str, webhook: Webhook, locale: Callable[[], Awaitable[Locale]] | None = None
    ) -> None:
        self.user_id = user_id
        self.webhook = webhook
        self._locale = locale
        self._queued: list[Message] | None = []

    async def locale(self) -> Locale:
        return await self._locale() if self._locale is not None else Locale.EN

    async def say(self, message: Message) -> None:
        if self._queued is not None:
            self._queued.append(message)
        else:
            await self.webhook.follow_up(message, private=True)

    def close(self) -> list[Reply]:
        """What was said until now, as private replies; later messages follow up."""
        queued, self._queued = self._queued or [], None
        return [Reply(m, private=True) for m in queued]


current_private_line: ContextVar[PrivateLine | None] = ContextVar(
    "current_private_line", default=None
)


__all__ = [
    "DEFERRED_PRIVATE",
    "EPHEMERAL",
    "PONG",
    "DeferredReply",
    "PrivateLine",
    "Webhook",
    "choices_response",
    "current_private_line",
    "message_data",
    "reply_response",
]
