"""`DiscordChat`: the core's `Chat` port on Discord, over the adapter's REST client.

- post_message: an embed with one button per choice (a ``custom_id`` the core wrote:
  any process, after any restart, can take its clicks).
- reply_in_thread / upload_image: in a thread started from the question message (its id is
  the message's id); without the permission to create one, a reply to the message.
- send_private: while an interaction of that user is handled, one of its private replies
  (ephemeral); otherwise a DM.
- send_file (`bot.ports.PrivateFiles`, `/quiz mydata`): a DM with the file attached. A DM
  stays in the member's direct messages; an ephemeral reply is gone once Discord reloads,
  and a data export is something to keep. A member who takes no DMs from the server's
  members (Discord's 50007) is told how to allow them; a file over Discord's limit goes
  gzip-compressed.
- update_message: an edit (no buttons left: a closed question loses them).

A message in a thread is edited through the thread's id, which the core does not keep
(it stores a message id with the question's channel): its `MessageRef.message` is
``"<thread>/<message>"``, opaque to the core and enough to find it after a restart.

A lost race — the message deleted, the thread archived or locked, the bot removed from the
channel — is logged and does not raise: the quiz state is in the database either way.
Other failures raise `PlatformError` (logged and counted by the client).
"""

from __future__ import annotations

import asyncio
import gzip
import logging
from collections import OrderedDict
from typing import Any

from adapters.discord.payloads import DM_WORKSPACE
from adapters.discord.render import (
    ATTACHMENT_DESCRIPTION_LIMIT,
    content,
    image_attachment,
    message_json,
    no_mentions,
    truncate,
)
from adapters.discord.replies import current_private_line
from adapters.discord.rest import DiscordError, DiscordRest
from bot.domain import ChannelRef, Locale, MessageRef, Platform, UserRef
from bot.errors import PlatformError, UserFacingError
from bot.i18n import N_, translator
from bot.messages import Attachment, Image, Message

log = logging.getLogger(__name__)

THREAD_NAME_LIMIT = 100
THREAD_ARCHIVE_MINUTES = 1440
THREAD_ALREADY_EXISTS = 160004
MISSING_PERMISSIONS = 50013
# Unknown channel / message, missing access, archived thread, locked thread.
LOST_RACE_CODES = frozenset({10003, 10008, 50001, 50083, 160005})
DMS_CLOSED = 50007  # Cannot send messages to this user (their privacy settings)
FILE_LIMIT = 10 * 1024 * 1024  # what a bot may attach to a message on any server

FILE_NOT_SENT = N_(
    "I could not send you the file: Discord refused a direct message from me. Allow direct "
    "messages from this server's members (the server's menu, Privacy Settings) and run the "
    "command again."
)
FILE_TOO_LARGE = N_(
    "The file {name} is {size} MB even compressed, over Discord's {limit} MiB for a file "
    "from a bot. An operator can export your data with: quizbot member export {who}"
)
_REMEMBERED = 10_000


def _located(ref: MessageRef) -> tuple[str, str]:
    """(channel or thread id, message id) of a message the chat sent."""
    where, _, message = ref.message.rpartition("/")
    return where or ref.channel.channel, message


def _lost_race(exc: PlatformError) -> bool:
    code = exc.code if isinstance(exc, DiscordError) else None
    return exc.status == 404 or code in LOST_RACE_CODES


async def _locale_of(user: UserRef) -> Locale:
    """The language `user`'s interaction is answered in, while it is handled."""
    line = current_private_line.get()
    if line is not None and line.user_id == user.user:
        return await line.locale()
    return Locale.EN


class DiscordChat:
    def __init__(self, rest: DiscordRest, *, file_limit: int = FILE_LIMIT) -> None:
        self.rest = rest
        self.file_limit = file_limit
        # (channel, message) -> thread id, or None where replies stand in for a thread.
        self._threads: OrderedDict[tuple[str, str], str | None] = OrderedDict()
        self._titles: OrderedDict[tuple[str, str], str] = OrderedDict()

    @staticmethod
    def _remember(cache: OrderedDict[tuple[str, str], Any], key: tuple[str, str], v: Any) -> None:
        cache[key] = v
        cache.move_to_end(key)
        while len(cache) > _REMEMBERED:
            cache.popitem(last=False)

    async def group_members(self, workspace: str, group: str) -> list[UserRef] | None:
        """A role's members (`bot.teams.GroupDirectory`), 1,000 a page; None when Discord
        refuses (the Server Members intent is off, no such server)."""
        found: list[UserRef] = []
        after = "0"
        for _ in range(100):
            try:
                page = await self.rest.call(
                    "GET", f"/guilds/{workspace}/members?limit=1000&after={after}"
                )
            except (DiscordError, PlatformError):
                return None
            if not isinstance(page, list):
                return None
            for member in page:
                who = member.get("user") or {}
                if group in (member.get("roles") or []) and who.get("id"):
                    name = member.get("nick") or who.get("global_name") or who.get("username")
                    found.append(
                        UserRef(Platform.DISCORD, workspace, str(who["id"]), str(name or ""))
                    )
            if len(page) < 1000:
                break
            after = str((page[-1].get("user") or {}).get("id", after))
        return found

    async def _send(self, channel_id: str, body: dict[str, Any], image: Image | None = None) -> str:
        """POST a message; its id."""
        files: list[tuple[str, bytes]] = []
        if image is not None:
            files.append((image.filename, image.data))
            body = {**body, "attachments": [image_attachment(image)]}
        sent = await self.rest.call("POST", f"/channels/{channel_id}/messages", body, files=files)
        return str(sent["id"]) if isinstance(sent, dict) and "id" in sent else ""

    # -- Chat ----------------------------------------------------------------------------

    async def post_message(self, channel: ChannelRef, message: Message) -> MessageRef:
        ref = MessageRef(
            channel, await self._send(channel.channel, message_json(message), message.image)
        )
        if message.title:
            self._remember(self._titles, (channel.channel, ref.message), message.title)
        return ref

    async def reply_in_thread(self, parent: MessageRef, message: Message) -> MessageRef:
        where, sent = await self._in_thread(
            parent, message.title, message_json(message), message.image
        )
        if not sent:
            return parent
        in_thread = where != parent.channel.channel
        return MessageRef(parent.channel, f"{where}/{sent}" if in_thread else sent)

    async def send_private(self, channel: ChannelRef, user: UserRef, message: Message) -> None:
        line = current_private_line.get()
        if line is not None and line.user_id == user.user:
            await line.say(message)
            return
        try:
            await self._send(await self._dm_channel(user), message_json(message), message.image)
        except PlatformError as exc:
            # 50007: the user does not accept DMs from this server's members.
            log.warning("could not DM user %s: %s", user.user, exc.reason)

    async def send_file(
        self, channel: ChannelRef, user: UserRef, file: Attachment, comment: str = ""
    ) -> None:
        """`file` in a DM to `user`, with `comment` as the message; `UserFacingError` (in
        the member's language) when Discord refuses the DM or the file is too large."""
        name, data = file.filename, file.data
        if len(data) > self.file_limit:
            name, data = f"{name}.gz", await asyncio.to_thread(gzip.compress, data)
        if len(data) > self.file_limit:
            t = translator(await _locale_of(user))
            raise UserFacingError(
                t(
                    FILE_TOO_LARGE,
                    name=name,
                    size=f"{len(data) / 1e6:.1f}",
                    limit=f"{self.file_limit / (1024 * 1024):g}",
                    who=f"{user.platform}:{user.workspace}:{user.user}",
                )
            )
        attachment: dict[str, Any] = {"id": 0, "filename": name}
        if file.title:
            attachment["description"] = truncate(file.title, ATTACHMENT_DESCRIPTION_LIMIT)
        body: dict[str, Any] = {"attachments": [attachment], "allowed_mentions": no_mentions()}
        if comment:
            body["content"] = content(comment)
        try:
            dm = await self._dm_channel(user)
            await self.rest.call("POST", f"/channels/{dm}/messages", body, files=[(name, data)])
        except DiscordError as exc:
            if exc.code != DMS_CLOSED:
                raise
            raise UserFacingError(translator(await _locale_of(user))(FILE_NOT_SENT)) from None

    async def _dm_channel(self, user: UserRef) -> str:
        """The id of the bot's DM channel with `user` (Discord gives the same one again)."""
        dm = await self.rest.call("POST", "/users/@me/channels", {"recipient_id": user.user})
        if not isinstance(dm, dict) or "id" not in dm:
            raise DiscordError("POST /users/@me/channels", None, None, "no channel id")
        return str(dm["id"])

    async def update_message(self, ref: MessageRef, message: Message) -> None:
        where, message_id = _located(ref)
        path = f"/channels/{where}/messages/{message_id}"
        try:
            await self.rest.call("PATCH", path, message_json(message))
        except PlatformError as exc:
            if not _lost_race(exc):
                raise
            log.warning("could not edit message %s: %s", ref, exc.reason)

    async def upload_image(self, parent: MessageRef, image: Image, comment: str = "") -> None:
        body: dict[str, Any] = {"allowed_mentions": no_mentions()}
        if comment:
            body["content"] = content(comment)
        await self._in_thread(parent, image.title, body, image)

    # -- threads -------------------------------------------------------------------------

    async def _in_thread(
        self, parent: MessageRef, title: str, body: dict[str, Any], image: Image | None
    ) -> tuple[str, str]:
        """Send in the thread of `parent`, or as a reply to it: (where, message id); the
        id is "" when neither could be."""
        thread = await self._thread(parent, title)
        where, parent_id = _located(parent)
        try:
            if thread is not None:
                try:
                    return thread, await self._send(thread, body, image)
                except PlatformError as exc:
                    if not _lost_race(exc):
                        raise
                    log.warning("thread %s of message %s: %s; replying", thread, parent, exc.reason)
                    self._remember(self._threads, (where, parent_id), None)
            reply = {**body, "message_reference": self._reference(parent)}
            return where, await self._send(where, reply, image)
        except PlatformError as exc:
            if not _lost_race(exc):
                raise
            log.warning("could not reply to message %s: %s", parent, exc.reason)
            return where, ""

    async def _thread(self, parent: MessageRef, fallback_name: str) -> str | None:
        """The thread under `parent`, created on first use. A thread started from a message
        has the message's id, so one made before a restart is found again by its id."""
        where, parent_id = _located(parent)
        if where != parent.channel.channel:
            return where  # a message in a thread: its thread (threads do not nest)
        key = (where, parent_id)
        if key in self._threads:
            return self._threads[key]
        if parent.channel.workspace == DM_WORKSPACE:
            self._remember(self._threads, key, None)
            return None
        name = self._titles.get(key) or fallback_name or "quiz"
        body = {
            "name": truncate(name, THREAD_NAME_LIMIT),
            "auto_archive_duration": THREAD_ARCHIVE_MINUTES,
        }
        path = f"/channels/{where}/messages/{parent_id}/threads"
        thread: str | None
        try:
            created = await self.rest.call("POST", path, body)
            thread = str(created["id"])
        except PlatformError as exc:
            code = exc.code if isinstance(exc, DiscordError) else None
            if code == THREAD_ALREADY_EXISTS:
                thread = parent_id
            elif exc.status == 403 or code == MISSING_PERMISSIONS:
                log.info(
                    "no thread permission in channel %s (%s): replying", parent.channel, exc.reason
                )
                thread = None
            elif _lost_race(exc):
                log.warning("could not start a thread on message %s: %s", parent, exc.reason)
                thread = None
            else:
                raise
        self._remember(self._threads, key, thread)
        return thread

    @staticmethod
    def _reference(parent: MessageRef) -> dict[str, Any]:
        where, parent_id = _located(parent)
        ref: dict[str, Any] = {
            "message_id": parent_id,
            "channel_id": where,
            "fail_if_not_exists": False,
        }
        if parent.channel.workspace != DM_WORKSPACE:
            ref["guild_id"] = parent.channel.workspace
        return ref


__all__ = ["DiscordChat"]
