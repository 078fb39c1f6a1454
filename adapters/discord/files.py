"""Files sent with a command: Discord's attachment options (`/quiz clinic
snapshot:<file>`, `/quiz import file:<file>`), handed to the feature's `bot.intake.FileRoute`.

A file is part of the invoker's own command (Discord resolves it in the interaction,
``data.resolved.attachments``), so only the member who sent it is ever answered about it,
privately. The steps:

1. the route's `accept`, with what needs no download (the announced size, the command's
   other options, who sent it) — a refusal is the initial response itself, one clear
   private line;
2. a private deferral ("thinking…");
3. then: the file is streamed from Discord's CDN into a private temporary file (mode
   0600), stopping at the route's cap whatever size was announced, and the route's work
   runs with the deferred reply to edit as it goes (`replies.DeferredReply`). The temporary
   file is gone afterwards, whatever happened.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from urllib.parse import urlsplit

from adapters.discord.payloads import (
    AttachmentPayload,
    CommandDataPayload,
    Interaction,
    InteractionPayload,
    channel_ref,
    option_values,
    subcommand,
    user_ref,
)
from adapters.discord.replies import DeferredReply
from adapters.discord.rest import DiscordRest
from bot.admin import AdminCheck
from bot.domain import Locale
from bot.errors import PlatformError
from bot.features import Registry
from bot.i18n import N_, translator
from bot.intake import FileRoute, FileWork, SentFile, accepted, handle
from bot.logs import ThrottledLog
from bot.messages import Message
from bot.uploads import private_temp_file

log = logging.getLogger(__name__)

NOT_ATTACHED = N_(
    "The file for {option} did not arrive with the command; run the command again with "
    "the file attached."
)
FILE_NOT_READ = N_("I could not download {name} from Discord ({why}); please attach it again.")
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})  # a local CDN stand-in (the tests)
NAME_LIMIT = 100

AdminOf = Callable[[InteractionPayload], AdminCheck]


class AttachedCommands:
    def __init__(self, rest: DiscordRest, registry: Registry, admin_of: AdminOf) -> None:
        self.rest = rest
        self.registry = registry
        self.admin_of = admin_of
        self._problems = ThrottledLog(log)

    def route_for(self, interaction: Interaction) -> FileRoute | None:
        """The route of a command that carries a file in its route's option (without
        one, the command runs as usual: `/quiz clinic` alone says how to send one)."""
        name, _ = subcommand(interaction.command)
        route = self.registry.file_route(name)
        if route is None or route.option not in option_values(interaction.command):
            return None
        return route

    async def accept(
        self, interaction: Interaction, route: FileRoute, locale: Locale, reply: DeferredReply
    ) -> Callable[[], Awaitable[None]] | Message:
        """What to do once the deferral went out (download, then the route's work, telling
        `reply`); or the refusal, when the file is refused before any download."""
        data = interaction.command
        values = option_values(data)
        found = resolved_attachment(data, values.get(route.option))
        if found is None or not _fetchable(found["url"]):
            return Message(body=translator(locale)(NOT_ATTACHED, option=route.option))
        payload = interaction.payload
        sent = SentFile(
            name=found["filename"][:NAME_LIMIT],
            size=found["size"],
            user=user_ref(payload),
            channel=channel_ref(payload),
            locale=locale,
            admin=self.admin_of(payload),
            options={k: v for k, v in values.items() if k != route.option},
        )
        work = await accepted(route, sent, self._problems)
        if isinstance(work, Message):
            return work
        url = found["url"]
        return lambda: self._take(sent, url, work, reply, route.max_bytes)

    async def _take(
        self, sent: SentFile, url: str, work: FileWork, reply: DeferredReply, max_bytes: int
    ) -> None:
        """Download the file and run `work` on it (the member is told of any failure)."""
        t = translator(sent.locale)
        path = await asyncio.to_thread(private_temp_file, sent.name)
        try:
            try:
                await self.rest.download(url, path, max_bytes)
            except PlatformError as exc:
                why = exc.reason or str(exc.status)
                await reply.result(Message(body=t(FILE_NOT_READ, name=sent.name, why=why)))
                return
            await handle(work, path, reply, sent, self._problems)
        finally:
            await asyncio.to_thread(path.unlink, True)


def resolved_attachment(
    data: CommandDataPayload, attachment_id: object
) -> AttachmentPayload | None:
    """The attachment an option names, as Discord resolved it in the command itself; None
    when it is not there or not well-formed (nothing is fetched that the command did not
    carry)."""
    resolved = data.get("resolved")
    attachments = resolved.get("attachments") if isinstance(resolved, Mapping) else None
    found = attachments.get(str(attachment_id)) if isinstance(attachments, Mapping) else None
    if not isinstance(found, Mapping):
        return None
    size, url, name = found.get("size"), found.get("url"), found.get("filename")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return None
    if not isinstance(url, str) or not isinstance(name, str) or not name:
        return None
    return found


def _fetchable(url: str) -> bool:
    """Discord's CDN speaks HTTPS; plain HTTP only to this host (a stand-in CDN)."""
    parts = urlsplit(url)
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in LOOPBACK)


__all__ = ["AdminOf", "AttachedCommands", "resolved_attachment"]
