"""`DiscordChat`: the core's `Chat` port on Discord.

- post_message: an embed with a persistent view (one button per choice).
- reply_in_thread / upload_image: in a thread started from the question message (its id is
  the message's id); without the permission to create one, a reply to the message.
- send_private: ephemeral in the interaction being handled for that user, else a DM.
- update_message: an edit (``view=None`` removes the buttons of a closed question).

A lost race — the message deleted, the thread archived or locked, the bot removed from the
channel — is logged and does not raise: the quiz state is in the database either way.
"""

from __future__ import annotations

import io
import logging
from collections import OrderedDict
from typing import Any

import discord

from adapters.discord.payloads import DM_WORKSPACE
from adapters.discord.render import content, truncate
from adapters.discord.respond import current_responder, message_kwargs
from bot.domain import ChannelRef, MessageRef, UserRef
from bot.messages import Image, Message

log = logging.getLogger(__name__)

THREAD_NAME_LIMIT = 100
THREAD_ARCHIVE_MINUTES = 1440
THREAD_ALREADY_EXISTS = 160004
# Unknown channel / message, missing access, archived thread, locked thread.
LOST_RACE_CODES = frozenset({10003, 10008, 50001, 50083, 160005})
_REMEMBERED_THREADS = 10_000


def _lost_race(exc: discord.HTTPException) -> bool:
    return isinstance(exc, discord.NotFound) or exc.code in LOST_RACE_CODES


class DiscordChat:
    def __init__(self, client: discord.Client) -> None:
        self._client = client
        # (channel, message) -> thread id, or None where replies stand in for a thread.
        self._threads: OrderedDict[tuple[str, str], str | None] = OrderedDict()
        self._titles: OrderedDict[tuple[str, str], str] = OrderedDict()

    def _channel(self, channel: ChannelRef, channel_id: str | None = None) -> Any:
        guild = None if channel.workspace == DM_WORKSPACE else int(channel.workspace)
        return self._client.get_partial_messageable(
            int(channel_id or channel.channel), guild_id=guild
        )

    @staticmethod
    def _remember(cache: OrderedDict[tuple[str, str], Any], key: tuple[str, str], v: Any) -> None:
        cache[key] = v
        cache.move_to_end(key)
        while len(cache) > _REMEMBERED_THREADS:
            cache.popitem(last=False)

    # -- Chat ----------------------------------------------------------------------------

    async def post_message(self, channel: ChannelRef, message: Message) -> MessageRef:
        sent = await self._channel(channel).send(**message_kwargs(message))
        ref = MessageRef(channel, str(sent.id))
        if message.title:
            self._remember(self._titles, (channel.channel, ref.message), message.title)
        return ref

    async def reply_in_thread(self, parent: MessageRef, message: Message) -> MessageRef:
        kwargs = message_kwargs(message)
        thread = await self._thread(parent, message.title)
        try:
            if thread is not None:
                try:
                    sent = await self._channel(parent.channel, thread).send(**kwargs)
                    return MessageRef(parent.channel, str(sent.id))
                except discord.HTTPException as exc:
                    if not _lost_race(exc):
                        raise
                    log.warning("thread %s of message %s: %s; replying", thread, parent, exc)
                    self._remember(self._threads, (parent.channel.channel, parent.message), None)
                    kwargs = message_kwargs(message)  # files are consumed by a failed send
            sent = await self._channel(parent.channel).send(
                reference=self._reference(parent), **kwargs
            )
            return MessageRef(parent.channel, str(sent.id))
        except discord.HTTPException as exc:
            if not _lost_race(exc):
                raise
            log.warning("could not reply to message %s: %s", parent, exc)
            return parent

    async def send_private(self, channel: ChannelRef, user: UserRef, message: Message) -> None:
        responder = current_responder.get()
        if responder is not None and str(responder.user_id) == user.user:
            await responder.send(message, private=True)
            return
        try:
            dm = await self._client.create_dm(discord.Object(int(user.user)))
            await dm.send(**message_kwargs(message))
        except discord.HTTPException as exc:
            # 50007: the user does not accept DMs from this server's members.
            log.warning("could not DM user %s: %s", user.user, exc)

    async def update_message(self, ref: MessageRef, message: Message) -> None:
        kwargs = message_kwargs(message)
        kwargs.pop("files", None)
        kwargs.setdefault("view", None)
        target = self._channel(ref.channel).get_partial_message(int(ref.message))
        try:
            await target.edit(**kwargs)
        except discord.HTTPException as exc:
            if not _lost_race(exc):
                raise
            log.warning("could not edit message %s: %s", ref, exc)

    async def upload_image(self, parent: MessageRef, image: Image, comment: str = "") -> None:
        def file() -> discord.File:
            return discord.File(io.BytesIO(image.data), image.filename, description=image.title)

        thread = await self._thread(parent, image.title)
        try:
            if thread is not None:
                try:
                    await self._channel(parent.channel, thread).send(
                        content(comment) or None, file=file()
                    )
                    return
                except discord.HTTPException as exc:
                    if not _lost_race(exc):
                        raise
                    log.warning("thread %s of message %s: %s; replying", thread, parent, exc)
            await self._channel(parent.channel).send(
                content(comment) or None, file=file(), reference=self._reference(parent)
            )
        except discord.HTTPException as exc:
            if not _lost_race(exc):
                raise
            log.warning("could not upload %s for message %s: %s", image.filename, parent, exc)

    # -- threads -------------------------------------------------------------------------

    async def _thread(self, parent: MessageRef, fallback_name: str) -> str | None:
        """The thread under `parent`, created on first use. A thread started from a message
        has the message's id, so one made before a restart is found again by its id."""
        key = (parent.channel.channel, parent.message)
        if key in self._threads:
            return self._threads[key]
        if parent.channel.workspace == DM_WORKSPACE:
            self._remember(self._threads, key, None)
            return None
        name = self._titles.get(key) or fallback_name or "quiz"
        message = self._channel(parent.channel).get_partial_message(int(parent.message))
        thread: str | None
        try:
            created = await message.create_thread(
                name=truncate(name, THREAD_NAME_LIMIT), auto_archive_duration=THREAD_ARCHIVE_MINUTES
            )
            thread = str(created.id)
        except discord.Forbidden as exc:
            log.info("no thread permission in channel %s (%s): replying", parent.channel, exc)
            thread = None
        except discord.HTTPException as exc:
            if exc.code == THREAD_ALREADY_EXISTS:
                thread = parent.message
            elif _lost_race(exc):
                log.warning("could not start a thread on message %s: %s", parent, exc)
                thread = None
            else:
                raise
        self._remember(self._threads, key, thread)
        return thread

    @staticmethod
    def _reference(parent: MessageRef) -> discord.MessageReference:
        guild = None if parent.channel.workspace == DM_WORKSPACE else int(parent.channel.workspace)
        return discord.MessageReference(
            message_id=int(parent.message),
            channel_id=int(parent.channel.channel),
            guild_id=guild,
            fail_if_not_exists=False,
        )


__all__ = ["DiscordChat"]
