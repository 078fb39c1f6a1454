"""Files members share with the bot in a direct message: the Events API's `message` event
(subtype ``file_share``, channel type ``im``), routed by name to the feature whose
`bot.intake.FileRoute` takes it — question files (`bot.imports`), memory snapshots (the
clinic).

The event is acknowledged at once; then the route's checks (who, how large, whether the
feature is on: refused before any download), the download (the file's ``url_private``, with
the bot token, ``files:read``) into a private temporary file, and the route's work, which
answers in the direct message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from adapters.slack.chat import SlackChat
from bot.admin import AdminCheck
from bot.deliveries import Deliveries
from bot.domain import ChannelRef, MessageRef, Platform, UserRef
from bot.errors import PlatformError
from bot.features import Registry
from bot.i18n import N_, translator
from bot.intake import FileRoute, SentFile, accepted, handle
from bot.logs import ThrottledLog
from bot.messages import Message
from bot.quiz import QuizService
from bot.tasks import TaskSupervisor
from bot.uploads import private_temp_file

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SharedFile:
    """A file a member sent the bot, as the event describes it."""

    id: str
    name: str
    size: int
    mimetype: str
    url: str  # url_private_download (or url_private): needs the bot token
    channel: ChannelRef  # the direct message: answers go here
    user: UserRef
    event_id: str = ""
    text: str = ""  # the message that carried it ("80": the GPU's GiB, for the clinic)


class DirectMessage:
    """A file's answers in the member's DM with the bot: the status line is posted, then
    edited; the result replaces it, with the plot in its thread."""

    def __init__(self, chat: SlackChat, channel: ChannelRef) -> None:
        self.chat = chat
        self.channel = channel
        self._line: MessageRef | None = None

    async def status(self, message: Message) -> None:
        if self._line is None:
            self._line = await self.chat.post_message(self.channel, message)
        else:
            await self.chat.update_message(self._line, message)

    async def result(self, message: Message) -> None:
        text = replace(message, image=None)
        if self._line is None:
            self._line = await self.chat.post_message(self.channel, text)
        else:
            await self.chat.update_message(self._line, text)
        if message.image is not None:
            await self.chat.upload_image(self._line, message.image)


def shared_files(body: Mapping[str, Any]) -> list[SharedFile]:
    """The files of a ``message``/``file_share`` event in a direct message; [] for any
    other event (a channel message, the bot's own upload, an edit)."""
    event = body.get("event") or {}
    if (
        event.get("type") != "message"
        or event.get("subtype") != "file_share"
        or event.get("channel_type") != "im"
        or event.get("bot_id")
    ):
        return []
    team = str(body.get("team_id") or event.get("team") or "")
    user = UserRef(Platform.SLACK, team, str(event.get("user", "")))
    channel = ChannelRef(Platform.SLACK, team, str(event.get("channel", "")))
    out = []
    for f in event.get("files") or []:
        url = f.get("url_private_download") or f.get("url_private")
        if not isinstance(f, dict) or not url or not user.user or not channel.channel:
            continue
        out.append(
            SharedFile(
                id=str(f.get("id", "")),
                name=str(f.get("name") or f.get("title") or "file"),
                size=int(f.get("size") or 0),
                mimetype=str(f.get("mimetype", "")),
                url=str(url),
                channel=channel,
                user=user,
                event_id=str(body.get("event_id", "")),
                text=str(event.get("text") or "")[:200],
            )
        )
    return out


FILE_FAILED = N_(
    "I could not read {name} from Slack: {reason}. Send it again in a moment; if it keeps "
    "failing, an operator checks that the app has the files:read scope."
)
FILE_NOT_TAKEN = N_(
    "I did not take {name}: in a direct message I take memory snapshots (.pickle, for the "
    "memory clinic) and question files (.yaml, .csv, .json: admins import them into the "
    "team pack)."
)
PLATFORM = "slack"


class FileRoutes:
    """The Events API's file shares, routed to the feature whose route takes each file;
    each is a stored delivery (`slack:file:<event>:<file>`), run after the acknowledgement."""

    def __init__(
        self,
        chat: SlackChat,
        service: QuizService,
        registry: Registry,
        deliveries: Deliveries,
        tasks: TaskSupervisor,
        admin_of: Callable[[UserRef], AdminCheck],
    ) -> None:
        self.chat = chat
        self.service = service
        self.registry = registry
        self.deliveries = deliveries
        self.tasks = tasks
        self.admin_of = admin_of
        self._problems = ThrottledLog(log)

    async def on_event(self, body: dict[str, Any]) -> None:
        """Bolt's `message` listener: returns at once (the work runs after the ack)."""
        for file in shared_files(body):
            route = self.registry.file_route_for(file.name)
            if route is None:
                self.tasks.spawn(self._not_taken(file), name="slack-file")
                continue
            key = _key(file)
            if file.event_id and not await self.deliveries.begin(
                key, PLATFORM, {"kind": "file", "body": body}
            ):
                continue  # Slack sent the event again
            self.tasks.spawn(self._run(file, route, key), name="slack-file")

    async def replay(self, payload: Mapping[str, Any], key: str) -> None:
        """A stored file share whose handling a crash interrupted."""
        for file in shared_files(payload.get("body") or {}):
            route = self.registry.file_route_for(file.name)
            if route is not None and _key(file) == key:
                await self._run(file, route, None)

    async def _not_taken(self, file: SharedFile) -> None:
        t = translator(await self.service.locale_for(file.channel))
        with contextlib.suppress(PlatformError):
            await self.chat.post_message(
                file.channel, Message(body=t(FILE_NOT_TAKEN, name=file.name[:60]))
            )

    async def _run(self, file: SharedFile, route: FileRoute, key: str | None) -> None:
        locale = await self.service.locale_for(file.channel)
        reply = DirectMessage(self.chat, file.channel)
        sent = SentFile(
            file.name[:100],
            file.size,
            file.user,
            file.channel,
            locale,
            self.admin_of(file.user),
            text=file.text,
        )
        work = await accepted(route, sent, self._problems)
        with contextlib.suppress(PlatformError):  # logged and counted by SlackChat
            if isinstance(work, Message):
                await reply.result(work)
            else:
                path = await asyncio.to_thread(private_temp_file, file.name)
                try:
                    with await asyncio.to_thread(path.open, "wb") as out:
                        await self.chat.download(
                            file.url, route.max_bytes, out.write, file.user.workspace
                        )
                    await handle(work, path, reply, sent, self._problems)
                except PlatformError as exc:
                    t = translator(locale)
                    await reply.result(
                        Message(body=t(FILE_FAILED, name=file.name[:60], reason=exc.reason))
                    )
                finally:
                    await asyncio.to_thread(path.unlink, True)
        if key is not None and file.event_id:
            await self.deliveries.finish(key)


def _key(file: SharedFile) -> str:
    return f"slack:file:{file.event_id}:{file.id}"


__all__ = ["DirectMessage", "FileRoutes", "SharedFile", "shared_files"]
