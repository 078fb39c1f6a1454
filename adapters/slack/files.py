"""Files members share with the bot in a direct message: the Events API's `message` event
(subtype ``file_share``, channel type ``im``), routed by file to the feature that reads
it — question files (`bot.imports`), memory snapshots (the clinic) — through
`SlackAdapter.add_file_handler(accepts, handler)`.

The event is acknowledged at once; the download (the file's ``url_private``, with the bot
token, ``files:read``) and the handling run after it. A handler gets the file's facts and
a `Download` that reads it within a byte limit, and answers in the direct message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from adapters.slack.chat import SlackChat
from bot.commands import AdminStatus
from bot.deliveries import Deliveries
from bot.domain import ChannelRef, Platform, UserRef
from bot.errors import PlatformError
from bot.i18n import N_, translator
from bot.imports import MAX_UPLOAD_BYTES, QuestionImport, import_in_chat, too_large
from bot.messages import Message
from bot.quiz import QuizService
from bot.tasks import TaskSupervisor

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


class Download(Protocol):
    async def read(self, max_bytes: int) -> bytes:
        """The file's bytes; `PlatformError` when it is larger than `max_bytes`."""
        ...

    async def save(self, path: Path, max_bytes: int) -> int:
        """Write the file to `path` (streamed); its size. `PlatformError` as `read`."""
        ...


FileHandler = Callable[[SharedFile, Download], Awaitable[None]]
FileFilter = Callable[[SharedFile], bool]
Fetch = Callable[[str, int, Callable[[bytes], object]], Awaitable[int]]


class FileDownload:
    """`Download` over `SlackChat.download` (streamed, bounded)."""

    def __init__(self, fetch: Fetch, url: str) -> None:
        self._fetch = fetch
        self._url = url

    async def read(self, max_bytes: int) -> bytes:
        parts: list[bytes] = []
        await self._fetch(self._url, max_bytes, parts.append)
        return b"".join(parts)

    async def save(self, path: Path, max_bytes: int) -> int:
        out = await asyncio.to_thread(path.open, "wb")
        try:
            return await self._fetch(self._url, max_bytes, out.write)
        finally:
            out.close()


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
    """The Events API's file shares, routed to the handler whose filter takes each file;
    each is a stored delivery (`slack:file:<event>:<file>`), run after the acknowledgement."""

    def __init__(
        self, chat: SlackChat, service: QuizService, deliveries: Deliveries, tasks: TaskSupervisor
    ) -> None:
        self.chat = chat
        self.service = service
        self.deliveries = deliveries
        self.tasks = tasks
        self._routes: list[tuple[FileFilter, FileHandler]] = []

    def add(self, accepts: FileFilter, handler: FileHandler) -> None:
        self._routes.append((accepts, handler))

    def _handler(self, file: SharedFile) -> FileHandler | None:
        return next((h for accepts, h in self._routes if accepts(file)), None)

    async def on_event(self, body: dict[str, Any]) -> None:
        """Bolt's `message` listener: returns at once (the work runs after the ack)."""
        for file in shared_files(body):
            handler = self._handler(file)
            if handler is None:
                self.tasks.spawn(self._not_taken(file), name="slack-file")
                continue
            key = _key(file)
            if file.event_id and not await self.deliveries.begin(
                key, PLATFORM, {"kind": "file", "body": body}
            ):
                continue  # Slack sent the event again
            self.tasks.spawn(self._run(file, handler, key), name="slack-file")

    async def replay(self, payload: Mapping[str, Any], key: str) -> None:
        """A stored file share whose handling a crash interrupted."""
        for file in shared_files(payload.get("body") or {}):
            handler = self._handler(file)
            if handler is not None and _key(file) == key:
                await self._run(file, handler, None)

    async def _not_taken(self, file: SharedFile) -> None:
        t = translator(await self.service.locale_for(file.channel))
        with contextlib.suppress(PlatformError):
            await self.chat.post_message(
                file.channel, Message(body=t(FILE_NOT_TAKEN, name=file.name[:60]))
            )

    async def _run(self, file: SharedFile, handler: FileHandler, key: str | None) -> None:
        try:
            await handler(file, FileDownload(self.chat.download, file.url))
        except PlatformError as exc:
            t = translator(await self.service.locale_for(file.channel))
            with contextlib.suppress(PlatformError):
                await self.chat.post_message(
                    file.channel,
                    Message(body=t(FILE_FAILED, name=file.name[:60], reason=exc.reason)),
                )
        if key is not None and file.event_id:
            await self.deliveries.finish(key)


def _key(file: SharedFile) -> str:
    return f"slack:file:{file.event_id}:{file.id}"


class QuestionFiles:
    """Question files (.yaml, .csv, .json) an admin sends the bot: imported into their
    workspace's team pack, the report answered in the direct message."""

    def __init__(
        self,
        service: QuizService,
        importer: QuestionImport,
        admin_status: Callable[[UserRef], Awaitable[AdminStatus]],
        say: Callable[[ChannelRef, Message], Awaitable[object]],
    ) -> None:
        self.service = service
        self.importer = importer
        self.admin_status = admin_status
        self.say = say

    def accepts(self, file: SharedFile) -> bool:
        return self.importer.accepts(file.name)

    async def handle(self, file: SharedFile, download: Download) -> None:
        locale = await self.service.locale_for(file.channel)
        status = await self.admin_status(file.user)
        if status is AdminStatus.YES and file.size > MAX_UPLOAD_BYTES:
            message = Message(body=too_large(file.name, file.size, translator(locale)))
        else:
            data = await download.read(MAX_UPLOAD_BYTES) if status is AdminStatus.YES else b""
            message = await import_in_chat(
                self.importer, file.channel, file.user, status, file.name, data, locale
            )
        await self.say(file.channel, message)


__all__ = [
    "Download",
    "FileDownload",
    "FileFilter",
    "FileHandler",
    "FileRoutes",
    "QuestionFiles",
    "SharedFile",
    "shared_files",
]
