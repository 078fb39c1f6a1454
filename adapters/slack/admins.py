"""Who is an admin of a Slack workspace, in chat and on the dashboard alike: a user listed
in QUIZBOT_ADMINS, or a workspace admin or owner (``users.info``), each answer kept
`bot.admin.ADMIN_CACHE` at most. When Slack cannot say, UNKNOWN (not kept): the core
tells the user the check failed."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from adapters.slack.chat import SlackChat
from bot.admin import ADMIN_CACHE, AdminStatus
from bot.clock import Clock
from bot.domain import UserRef
from bot.errors import PlatformError
from bot.logs import ThrottledLog

log = logging.getLogger(__name__)
KEPT_MAX = 10_000  # answers kept; past this the expired ones are dropped


class SlackAdmins:
    def __init__(
        self,
        chat: SlackChat,
        clock: Clock,
        admin_ids: Iterable[str] = (),
        ttl: timedelta = ADMIN_CACHE,
    ) -> None:
        self.chat = chat
        self.clock = clock
        self.admin_ids = frozenset(admin_ids)
        self.ttl = ttl
        self._kept: dict[str, tuple[bool, datetime]] = {}
        self._problems = ThrottledLog(log)

    def kept(self, user: UserRef) -> AdminStatus | None:
        """The answer where no call is needed (QUIZBOT_ADMINS, or one kept); else None."""
        if user.user in self.admin_ids:
            return AdminStatus.YES
        kept = self._kept.get(user.key)
        if kept is not None and kept[1] > self.clock.now():
            return AdminStatus.YES if kept[0] else AdminStatus.NO
        return None

    async def __call__(self, user: UserRef) -> AdminStatus:
        if (status := self.kept(user)) is not None:
            return status
        now = self.clock.now()
        try:
            info = await self.chat.user_info(user.user, user.workspace)
        except PlatformError as exc:
            self._problems.problem(
                f"users.info {exc.reason[:60]}",
                "users.info failed (%s); only QUIZBOT_ADMINS count as admins until Slack answers",
                exc.reason,
            )
            return AdminStatus.UNKNOWN
        admin = any(bool(info.get(k)) for k in ("is_admin", "is_owner", "is_primary_owner"))
        if len(self._kept) >= KEPT_MAX:
            self._kept = {k: v for k, v in self._kept.items() if v[1] > now}
        self._kept[user.key] = (admin, now + self.ttl)
        return AdminStatus.YES if admin else AdminStatus.NO


__all__ = ["SlackAdmins"]
