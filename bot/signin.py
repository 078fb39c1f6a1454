"""Who is signed in to the dashboard, and the storage port the web adapter keeps it in.

A `WebSession` is one member of a platform signed in from one browser, with the
workspaces they may open (a Slack sign-in names one team; a Discord sign-in lists the
member's guilds that the bot is in). Sessions, sign-ins under way (OAuth state + PKCE
verifier) and sign-in rates live in the database, so every replica reads the same; the
adapter stores only hashes of the tokens it hands out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bot.domain import Locale, Platform, UserRef


@dataclass(frozen=True, slots=True)
class Membership:
    """A workspace a signed-in member may open; `admin` as the platform said at sign-in
    (None: asked per request, as Slack's users.info)."""

    workspace: str
    name: str = ""
    admin: bool | None = None


@dataclass(frozen=True, slots=True)
class WebSession:
    platform: Platform
    user: str
    name: str
    workspaces: tuple[Membership, ...]
    csrf: str
    created_at: datetime
    expires_at: datetime
    locale: Locale | None = None

    def membership(self, workspace: str) -> Membership | None:
        return next((m for m in self.workspaces if m.workspace == workspace), None)

    def member(self, workspace: str) -> UserRef:
        return UserRef(self.platform, workspace, self.user, self.name)


class WebSessions(Protocol):
    async def create(self, token_hash: str, session: WebSession) -> None: ...

    async def get(self, token_hash: str, now: datetime) -> WebSession | None:
        """The session, unless it expired."""
        ...

    async def set_locale(self, token_hash: str, locale: Locale) -> None: ...

    async def delete(self, token_hash: str) -> None: ...

    async def delete_member(self, platform: Platform, user: str) -> int:
        """Sign a member out of every browser (forget-me); how many sessions ended."""
        ...

    async def put_sign_in(
        self, state_hash: str, provider: str, verifier: str, now: datetime, expires: datetime
    ) -> None: ...

    async def take_sign_in(self, state_hash: str, provider: str, now: datetime) -> str | None:
        """The PKCE verifier of a sign-in under way, once (a second take gets None), and
        only before it expires."""
        ...

    async def hit(self, key: str, window_start: datetime) -> int:
        """Count one attempt of `key` in the window; the window's count so far."""
        ...

    async def purge(self, now: datetime) -> None:
        """Delete expired sessions, sign-ins and rate windows."""
        ...


def workspaces_named(ids: Sequence[tuple[str, str]]) -> tuple[Membership, ...]:
    return tuple(Membership(ws, name) for ws, name in ids)


__all__ = ["Membership", "WebSession", "WebSessions", "workspaces_named"]
