"""Files sent with a command: Discord's attachment options (`/quiz clinic
snapshot:<file>`), handed to the feature that registered the option.

A file is part of the invoker's own command (Discord resolves it in the interaction,
``data.resolved.attachments``), so only the member who sent it is ever answered about it,
privately. The steps:

1. `accept`: the route's checks that need no download (the announced size against the
   cap, the command's other options) — a refusal is the initial response itself, one
   clear private line;
2. a private deferral ("thinking…");
3. then: the file is streamed from Discord's CDN into a private temporary file (mode
   0600), stopping at the cap whatever size was announced, and the route's work runs with
   the deferred reply to edit as it goes (`replies.DeferredReply`). The temporary file is
   gone afterwards, whatever happened.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
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
from bot.commands import AdminStatus, failure_message
from bot.domain import ChannelRef, Locale, UserRef
from bot.errors import PlatformError, UserFacingError
from bot.i18n import N_, translator
from bot.logs import ThrottledLog, problem_key
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

OptionValue = str | int | float | bool


@dataclass(frozen=True, slots=True)
class AttachedFile:
    """A file sent with a command, before it is downloaded."""

    name: str  # as the member named it: shown in messages, never used as a path
    size: int  # as Discord announced it (the download stops at the cap regardless)
    url: str
    options: Mapping[str, OptionValue]  # the command's other option values, by name
    user: UserRef
    channel: ChannelRef
    locale: Locale  # the member's own (else the channel's)
    admin: AdminStatus = AdminStatus.NO  # as the command's own payload says


FileWork = Callable[[Path, DeferredReply], Awaitable[None]]
"""What a route does with the downloaded file (it owns the path until it returns)."""
StartFile = Callable[[AttachedFile], FileWork]
"""A route's checks before the download; raises `UserFacingError` to refuse the file."""
AdminOf = Callable[[InteractionPayload], AdminStatus]


@dataclass(frozen=True, slots=True)
class AttachmentRoute:
    """The file in option `option` of subcommand `command` goes to `start`, up to
    `max_bytes`."""

    command: str
    option: str
    max_bytes: int
    start: StartFile


class AttachedCommands:
    def __init__(self, rest: DiscordRest, admin_of: AdminOf | None = None) -> None:
        self.rest = rest
        self.admin_of = admin_of  # None: nobody sending a file counts as an admin
        self._routes: dict[str, AttachmentRoute] = {}
        self._problems = ThrottledLog(log)

    def add(self, route: AttachmentRoute) -> None:
        self._routes[route.command] = route

    def route_for(self, interaction: Interaction) -> AttachmentRoute | None:
        """The route of a command that carries a file in its route's option (without
        one, the command runs as usual: `/quiz clinic` alone says how to send one)."""
        name, _ = subcommand(interaction.command)
        route = self._routes.get(name)
        if route is None or route.option not in option_values(interaction.command):
            return None
        return route

    def accept(
        self, interaction: Interaction, route: AttachmentRoute, locale: Locale, reply: DeferredReply
    ) -> Callable[[], Awaitable[None]]:
        """What to do once the deferral went out (download, then the route's work, telling
        `reply`); `UserFacingError` when the file is refused before any download."""
        data = interaction.command
        values = option_values(data)
        found = resolved_attachment(data, values.get(route.option))
        if found is None or not _fetchable(found["url"]):
            raise UserFacingError(translator(locale)(NOT_ATTACHED, option=route.option))
        payload = interaction.payload
        attached = AttachedFile(
            name=found["filename"][:NAME_LIMIT],
            size=found["size"],
            url=found["url"],
            options={k: v for k, v in values.items() if k != route.option},
            user=user_ref(payload),
            channel=channel_ref(payload),
            locale=locale,
            admin=self.admin_of(payload) if self.admin_of is not None else AdminStatus.NO,
        )
        work = route.start(attached)
        return lambda: self._take(attached, work, reply, route.max_bytes)

    async def _take(
        self, attached: AttachedFile, work: FileWork, reply: DeferredReply, max_bytes: int
    ) -> None:
        """Download the file and run `work` on it; never raises (the member is told)."""
        t = translator(attached.locale)
        path = await asyncio.to_thread(private_temp_file, attached.name)
        try:
            try:
                await self.rest.download(attached.url, path, max_bytes)
            except PlatformError as exc:
                why = exc.reason or str(exc.status)
                await reply.result(Message(body=t(FILE_NOT_READ, name=attached.name, why=why)))
                return
            await work(path, reply)
        except Exception as exc:
            self._problems.problem(
                problem_key("discord file", exc), "a file sent with a command failed", exc=exc
            )
            await reply.result(failure_message(attached.locale, exc))
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


__all__ = [
    "AdminOf",
    "AttachedCommands",
    "AttachedFile",
    "AttachmentRoute",
    "FileWork",
    "StartFile",
    "private_temp_file",
    "resolved_attachment",
]
