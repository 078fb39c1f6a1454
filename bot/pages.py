"""Web pages as a feature contributes them: platform-neutral values, no web framework.

A feature lists its `Page`s (`Feature.pages`); the web adapter (`adapters/web/dashboard/`)
serves each one at ``/w/<platform>/<workspace id>/<path>``, signs the member in, checks
the workspace is theirs, asks `AdminCheck` for an admin page before the handler runs,
checks the CSRF token of every state-changing request, and renders what the handler
returns: a template with its context (`Render`), a redirect within the workspace
(`Redirect`) or a file (`Download`). Handlers call the same use cases as the chat
commands and buttons (decided once, validated the same).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.admin import AdminCheck
from bot.domain import ChannelRef, Locale, UserRef
from bot.errors import UserFacingError
from bot.intake import FileWork, SentFile
from bot.team import Workspace

if TYPE_CHECKING:
    from bot.features import Quiz
    from bot.ports import FeatureStore

GET = "GET"
POST = "POST"
# A path below the workspace: words, and `{name}` for a number taken from the URL.
_PATH = re.compile(r"(?:[a-z][a-z0-9-]*|\{[a-z]+\})(?:/(?:[a-z][a-z0-9-]*|\{[a-z]+\}))*|")


@dataclass(frozen=True, slots=True)
class Upload:
    """The file an upload page's POST carried: accepted by the feature's `FileRoute`
    before its body was read, then streamed to `path` (a private temporary file, at most
    the route's size). The page owns the file: `discard` it once the work is done."""

    sent: SentFile
    path: Path
    work: FileWork

    def discard(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


@dataclass(frozen=True, slots=True)
class PageRequest:
    """One request to a page, as the core sees it."""

    quiz: Quiz
    store: FeatureStore
    member: UserRef  # the signed-in member, in this workspace
    workspace: Workspace
    admin: AdminCheck  # asked by the adapter before an admin page; pages may ask again
    locale: Locale
    method: str
    query: Mapping[str, str] = field(default_factory=dict)
    form: Mapping[str, str] = field(default_factory=dict)
    args: Mapping[str, int] = field(default_factory=dict)  # the `{name}` parts of the path
    channels: tuple[ChannelRef, ...] = ()  # the workspace's channels, in name order
    upload: Upload | None = None

    @property
    def chosen(self) -> ChannelRef | None:
        """The channel named by ``?channel=<id>`` (or the form's); None when none is named
        (the page is about the whole workspace); an unknown one is a 404."""
        wanted = self.form.get("channel") or self.query.get("channel")
        if not wanted:
            return None
        for channel in self.channels:
            if channel.channel == wanted:
                return channel
        raise PageNotFound(wanted)

    @property
    def channel(self) -> ChannelRef:
        """The chosen channel, else the workspace's first (a known workspace has one)."""
        chosen = self.chosen
        if chosen is not None:
            return chosen
        if not self.channels:
            raise PageNotFound(self.workspace.key)
        return self.channels[0]


@dataclass(frozen=True, slots=True)
class Render:
    """Render `template` (a name the adapter knows) with `context`."""

    template: str
    context: Mapping[str, Any] = field(default_factory=dict)
    status: int = 200


@dataclass(frozen=True, slots=True)
class Redirect:
    """See other: `to` is a path below the workspace ("" is its overview; "/" the site's
    front page), with an optional query; `notice` is shown once on the next page (already
    translated)."""

    to: str
    notice: str = ""
    query: Mapping[str, str] = field(default_factory=dict)
    sign_out: bool = False  # end every session of the member first (they were erased)


@dataclass(frozen=True, slots=True)
class Download:
    """A file for the member's browser to save."""

    name: str
    content_type: str
    data: bytes


PageResult = Render | Redirect | Download
PageHandler = Callable[[PageRequest], Awaitable[PageResult]]


class PageNotFound(UserFacingError):
    """Not there, or not this member's: the adapter answers 404 without saying which."""


@dataclass(frozen=True, slots=True)
class Page:
    """A page below ``/w/<platform>/<workspace>/``.

    `path` is "" (the overview), a word (``review``) or words and `{name}` numbers
    (``clinic/{job}``). `methods` are the HTTP methods it takes (POST changes state: the
    adapter requires the CSRF token). `admin`: only the workspace's admins (checked by the
    adapter on every request, the refusal a 403). `title` (marked with N_) names it in the
    navigation when `nav` is set. `upload`: the command whose `bot.intake.FileRoute` takes
    the file a POST carries (its size checked before the body is read).
    """

    path: str
    handler: PageHandler
    title: str = ""
    methods: tuple[str, ...] = (GET,)
    admin: bool = False
    nav: bool = False
    upload: str = ""

    def __post_init__(self) -> None:
        if not _PATH.fullmatch(self.path):
            raise ValueError(f"page path {self.path!r}: lowercase words and {{name}} parts")
        if not self.methods or any(m not in (GET, POST) for m in self.methods):
            raise ValueError(f"page {self.path!r}: methods are GET and/or POST")
        if self.upload and POST not in self.methods:
            raise ValueError(f"page {self.path!r}: an upload page takes POST")

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(part[1:-1] for part in self.path.split("/") if part.startswith("{"))


__all__ = [
    "GET",
    "POST",
    "Download",
    "Page",
    "PageHandler",
    "PageNotFound",
    "PageRequest",
    "PageResult",
    "Redirect",
    "Render",
    "Upload",
]
