"""Who is an admin of a Discord server when the request does not say (the dashboard's
pages; an interaction carries the member's permissions and roles, `payloads.is_admin`):
the chat's rule — a user id in QUIZBOT_ADMINS, the server's owner, the configured admin
role, or Manage Server or Administrator from the member's roles and the server's
@everyone role — asked with the bot's token (``GET /guilds/{id}`` for the owner and the
roles' permissions, ``GET /guilds/{id}/members/{user}`` for the member's roles), each
answer kept `bot.admin.ADMIN_CACHE` at most. When Discord cannot say, UNKNOWN (not kept):
the page tells the member the check failed."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from adapters.discord.payloads import ADMINISTRATOR, MANAGE_GUILD
from adapters.discord.rest import DiscordError, DiscordRest
from bot.admin import ADMIN_CACHE, AdminStatus
from bot.clock import Clock
from bot.domain import UserRef

UNKNOWN_MEMBER = 10007  # not (or no longer) in the server
KEPT_MAX = 10_000  # answers kept; past this the expired ones are dropped


def admin_by_roles(guild: Any, member: Any, user: str, admin_role: str | None) -> bool:
    """The owner, the admin role, or Manage Server / Administrator in the permissions
    of the member's roles and of @everyone (the role whose id is the server's)."""
    if not isinstance(guild, dict) or not isinstance(member, dict):
        return False
    if str(guild.get("owner_id")) == user:
        return True
    roles = {str(r) for r in member.get("roles") or []}
    if admin_role is not None and admin_role in roles:
        return True
    perms = 0
    for role in guild.get("roles") or []:
        if isinstance(role, dict) and (
            str(role.get("id")) in roles or role.get("id") == guild.get("id")
        ):
            try:
                perms |= int(role.get("permissions") or 0)
            except (TypeError, ValueError):
                continue
    return bool(perms & (ADMINISTRATOR | MANAGE_GUILD))


class DiscordAdmins:
    def __init__(
        self,
        rest: DiscordRest,
        clock: Clock,
        *,
        admin_role: str | None = None,
        admin_ids: Iterable[str] = (),
        ttl: timedelta = ADMIN_CACHE,
    ) -> None:
        self.rest = rest
        self.clock = clock
        self.admin_role = admin_role
        self.admin_ids = frozenset(admin_ids)
        self.ttl = ttl
        self._kept: dict[tuple[str, str], tuple[AdminStatus, datetime]] = {}

    async def __call__(self, user: UserRef) -> AdminStatus:
        if user.user in self.admin_ids:
            return AdminStatus.YES
        guild, who = user.workspace, user.user
        if not (guild.isdigit() and who.isdigit()):
            return AdminStatus.NO  # no snowflakes: nobody Discord knows
        now = self.clock.now()
        kept = self._kept.get((guild, who))
        if kept is not None and kept[1] > now:
            return kept[0]
        try:
            # Two tries at most, and short waits: a page is waiting.
            server = await self.rest.call("GET", f"/guilds/{guild}", attempts=2, max_retry_after=2)
            member = await self.rest.call(
                "GET", f"/guilds/{guild}/members/{who}", attempts=2, max_retry_after=2
            )
        except DiscordError as exc:
            if exc.code != UNKNOWN_MEMBER:
                return AdminStatus.UNKNOWN
            status = AdminStatus.NO
        else:
            admin = admin_by_roles(server, member, who, self.admin_role)
            status = AdminStatus.YES if admin else AdminStatus.NO
        if len(self._kept) >= KEPT_MAX:
            self._kept = {k: v for k, v in self._kept.items() if v[1] > now}
        self._kept[(guild, who)] = (status, now + self.ttl)
        return status


__all__ = ["DiscordAdmins", "admin_by_roles"]
