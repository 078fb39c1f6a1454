"""Files a member shares with the bot in a direct message (Events API ``message`` events
in an ``im``): routed by name to a feature (the memory clinic takes ``.pickle``
snapshots), size-checked before anything is downloaded, downloaded from ``url_private``
with the bot token into a private temporary file that the feature owns.

Only a human's file in the bot's own DM is taken: a file in a channel or a group DM never
reaches the bot (it subscribes to ``message.im`` only), and a bot's file is ignored.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.domain import ChannelRef, Platform, UserRef


@dataclass(frozen=True, slots=True)
class SharedFile:
    id: str
    name: str
    size: int
    url: str
    user: UserRef
    channel: ChannelRef  # the direct message it came in
    text: str  # the message that carried it ("80" for the GPU size, say)


FileHandler = Callable[[SharedFile, Path], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class FileRoute:
    """Files whose name ends in one of `suffixes` go to `handler`, up to `max_bytes`."""

    suffixes: tuple[str, ...]
    max_bytes: int
    handler: FileHandler
    what: str  # for the "I take …" line: "memory snapshots (.pickle)"

    def takes(self, name: str) -> bool:
        return name.lower().endswith(self.suffixes)


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def shared_files(event: Mapping[str, Any], team: str) -> list[SharedFile]:
    """The files of a ``message`` event in a DM from a human; [] for anything else."""
    if event.get("channel_type") != "im" or event.get("bot_id") or not event.get("user"):
        return []
    if event.get("subtype") not in (None, "file_share"):
        return []
    user = UserRef(Platform.SLACK, team, str(event["user"]))
    channel = ChannelRef(Platform.SLACK, team, str(event.get("channel", "")))
    out = []
    for f in event.get("files") or []:
        if not isinstance(f, Mapping):
            continue
        url = f.get("url_private_download") or f.get("url_private")
        if not url:
            continue
        out.append(
            SharedFile(
                id=str(f.get("id", "")),
                name=safe_name(str(f.get("name") or "file")),
                size=int(f.get("size") or 0),
                url=str(url),
                user=user,
                channel=channel,
                text=str(event.get("text") or ""),
            )
        )
    return out


def safe_name(name: str) -> str:
    """A file name fit to show (and never to use as a path): no directories or oddities."""
    return _SAFE.sub("_", name.rsplit("/", 1)[-1])[:80] or "file"


__all__ = ["FileHandler", "FileRoute", "SharedFile", "safe_name", "shared_files"]
