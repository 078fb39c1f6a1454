"""Interactions -> core calls: a slash command becomes `run_command(…, "ask gpu")`, an answer
button becomes `QuizService.record_answer`. Every interaction gets its initial response
before Discord's 3 s deadline: the reply itself when the core is quick, else a deferral
("thinking…") that the reply replaces.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

import discord

from adapters.discord.payloads import (
    CommandDataPayload,
    InteractionPayload,
    MemberPayload,
    UserPayload,
    channel_ref,
    command_text,
    is_admin,
    user_locale,
    user_ref,
)
from adapters.discord.respond import SEND_ERRORS, Responder, current_responder, respond_in_time
from bot.commands import CommandSet, Invocation, Reply, run_command
from bot.domain import ChannelRef, Locale
from bot.i18n import N_, translator
from bot.messages import Message
from bot.quiz import QuizService

log = logging.getLogger(__name__)

# Discord-side restriction (Manage Server or the admin role), on top of the core's own.
RESTRICTED = frozenset({"schedule", "close"})

DONE = N_("Done.")
FAILED = N_("Something went wrong on our side; please try again in a moment.")
NOT_ALLOWED = N_(
    "Only members with the Manage Server permission (or the quiz admin role) can use /quiz {name}."
)


def interaction_payload(interaction: discord.Interaction[Any]) -> InteractionPayload:
    """The wire fields the adapter reads, from discord.py's parsed interaction."""
    payload = InteractionPayload(
        id=str(interaction.id),
        type=interaction.type.value,
        channel_id=str(interaction.channel_id),
        locale=interaction.locale.value,
    )
    if interaction.guild_id is not None:
        payload["guild_id"] = str(interaction.guild_id)
    if interaction.guild_locale is not None:
        payload["guild_locale"] = interaction.guild_locale.value
    u = interaction.user
    user = UserPayload(id=str(u.id), username=u.name, global_name=u.global_name)
    if isinstance(u, discord.Member):
        payload["member"] = MemberPayload(
            user=user,
            nick=u.nick,
            roles=[str(r.id) for r in u.roles],
            permissions=str(interaction.permissions.value),
        )
    else:
        payload["user"] = user
    return payload


class InteractionHandler:
    def __init__(
        self,
        service: QuizService,
        commands: CommandSet,
        *,
        admin_role: int | None = None,
        admin_ids: Iterable[str] = (),
        ack_deadline: float = 1.0,
    ) -> None:
        self.service = service
        self.commands = commands
        self.admin_role = str(admin_role) if admin_role is not None else None
        self.admin_ids = frozenset(admin_ids)
        self.ack_deadline = ack_deadline
        self._inflight: set[asyncio.Task[Any]] = set()

    async def drain(self, timeout: float) -> None:
        """Let interactions being handled finish (shutdown): a click already recorded still
        gets its answer."""
        if self._inflight:
            await asyncio.wait(set(self._inflight), timeout=timeout)

    def _track(self) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)

    # -- buttons -------------------------------------------------------------------------

    async def answer_clicked(
        self, interaction: discord.Interaction[Any], post_id: int, choice: int
    ) -> None:
        self._track()
        payload = interaction_payload(interaction)
        responder = Responder(interaction)
        work = asyncio.ensure_future(
            self.service.record_answer(
                post_id, user_ref(payload), choice, user_locale=user_locale(payload)
            )
        )
        await respond_in_time(responder, work, self.ack_deadline)
        try:
            reply = await work
        except Exception:
            log.exception("recording a click on post %s failed", post_id)
            await self._say(responder, self._failed(payload))
            return
        await self._say(responder, reply.message)

    async def demo_clicked(
        self, interaction: discord.Interaction[Any], post_id: int, demo: str
    ) -> None:
        await self.run(interaction, f"demo {demo}")

    # -- slash commands ------------------------------------------------------------------

    async def command(self, interaction: discord.Interaction[Any]) -> None:
        """Any `/quiz …` invocation: the text is rebuilt from the raw options."""
        data: CommandDataPayload = interaction.data  # type: ignore[assignment]
        await self.run(interaction, command_text(data))

    async def run(self, interaction: discord.Interaction[Any], text: str) -> None:
        self._track()
        payload = interaction_payload(interaction)
        responder = Responder(interaction)
        token = current_responder.set(responder)
        try:
            name = text.split(maxsplit=1)[0].lower() if text.strip() else ""
            admin = is_admin(payload, self.admin_role, self.admin_ids)
            if name in RESTRICTED and not admin:
                locale = user_locale(payload) or await self._channel_locale(channel_ref(payload))
                t = translator(locale)
                await self._say(responder, Message(body=t(NOT_ALLOWED, name=name)))
                return
            work = asyncio.ensure_future(self._invoke(payload, admin, text))
            await respond_in_time(responder, work, self.ack_deadline)
            try:
                replies, locale = await work
            except Exception:
                log.exception("/quiz %s failed", text)
                await self._say(responder, self._failed(payload))
                return
            for reply in replies:
                await self._say(responder, reply.message, private=reply.private)
            try:
                await responder.finish(translator(locale)(DONE))
            except SEND_ERRORS as exc:
                log.warning("could not finish interaction %s: %s", interaction.id, exc)
        finally:
            current_responder.reset(token)

    async def _invoke(
        self, payload: InteractionPayload, admin: bool, text: str
    ) -> tuple[list[Reply], Locale]:
        channel = channel_ref(payload)
        locale = user_locale(payload) or await self._channel_locale(channel)
        inv = Invocation(channel, user_ref(payload), locale, is_admin=admin)
        return await run_command(self.commands, self.service, inv, text), locale

    async def _channel_locale(self, channel: ChannelRef) -> Locale:
        return (await self.service.store.settings.get(channel)).locale

    # -- helpers -------------------------------------------------------------------------

    @staticmethod
    def _failed(payload: InteractionPayload) -> Message:
        return Message(body=translator(user_locale(payload) or Locale.EN)(FAILED))

    @staticmethod
    async def _say(responder: Responder, message: Message, *, private: bool = True) -> None:
        try:
            await responder.send(message, private=private)
        except SEND_ERRORS as exc:
            # The token expired (15 min) or the interaction was already answered elsewhere.
            log.warning("could not answer interaction %s: %s", responder.interaction.id, exc)


__all__ = ["InteractionHandler", "interaction_payload"]
