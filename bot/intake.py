"""Files members send a feature: a memory snapshot for the clinic, a question file to import.

A platform only fetches the bytes — Discord's attachment option of a command, a file in a
Slack direct message, a path typed in the console. What a file may be lives here, in the
feature's `FileRoute`: its size limit, whether the feature is on, who may send it, the
words of each refusal. The steps, the same on every platform:

1. `route.accept(sent)`, before anything is downloaded: raises `UserFacingError` (one clear
   private line for the member) or returns the work to do with the file;
2. the adapter streams the file into a private temporary file (`bot.uploads`), stopping at
   `route.max_bytes` whatever size was announced;
3. `work(path, reply)` runs and tells the member through `reply` (status lines, then the
   result); the adapter deletes its temporary file afterwards, whatever happened.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bot.admin import NOBODY, AdminCheck
from bot.boundary import as_message, guard
from bot.domain import ChannelRef, Locale, UserRef
from bot.logs import ThrottledLog
from bot.messages import Message

OptionValue = str | int | float | bool


@dataclass(frozen=True, slots=True)
class SentFile:
    """A file a member sent, before it is downloaded."""

    name: str  # as the member named it: shown in messages, never used as a path
    size: int  # as the platform announced it (the download stops at the cap regardless)
    user: UserRef
    channel: ChannelRef  # where the answers go (a DM, the command's channel)
    locale: Locale
    admin: AdminCheck = NOBODY
    options: Mapping[str, OptionValue] = field(default_factory=dict)  # the command's others
    text: str = ""  # what the member wrote beside it (a Slack DM's message)


class PrivateReply(Protocol):
    """Where a file's answers go, privately (a deferred ephemeral reply, a DM, the
    terminal)."""

    async def status(self, message: Message) -> None:
        """Show the status line, or replace the one shown."""
        ...

    async def result(self, message: Message) -> None:
        """The final answer (with its plot in `message.image`, if any)."""
        ...


FileWork = Callable[[Path, PrivateReply], Awaitable[None]]
"""What a route does with the downloaded file (the path is the adapter's: do not keep it)."""


@dataclass(frozen=True, slots=True)
class FileRoute:
    """Files sent with `/quiz <command>` (in its attachment `option` where a platform has
    one) or on their own when `accepts` takes their name."""

    command: str
    option: str
    max_bytes: int
    accepts: Callable[[str], bool]
    accept: Callable[[SentFile], Awaitable[FileWork]]


async def accepted(route: FileRoute, sent: SentFile, problems: ThrottledLog) -> FileWork | Message:
    """Step 1: the route's work for `sent`, or the message that refuses it."""

    async def accept() -> FileWork | Message:
        return await route.accept(sent)

    return await guard(problems, f"/quiz {route.command} file", sent.locale, accept(), as_message)


async def handle(
    work: FileWork, path: Path, reply: PrivateReply, sent: SentFile, problems: ThrottledLog
) -> None:
    """Step 3: run `work` on the downloaded file; a failure is told to the member through
    `reply` (this never raises for the work's own errors)."""

    async def run() -> Message | None:
        await work(path, reply)
        return None

    failed = await guard(problems, f"file {sent.name!r}", sent.locale, run(), as_message)
    if failed is not None:
        await reply.result(failed)


__all__ = [
    "FileRoute",
    "FileWork",
    "OptionValue",
    "PrivateReply",
    "SentFile",
    "accepted",
    "handle",
]
