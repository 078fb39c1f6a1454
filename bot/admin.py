"""Who is an admin: the answer travels with each request (`Invocation`, `Click`,
`Submission`, a sent file) as an `AdminCheck`, asked only when an admin-only command,
button or form needs it.

A platform that puts the answer in the request (Discord: the member's permissions and
roles) passes it as `known(status)`; one that needs a call (Slack: `users.info`) passes a
lookup that makes the call, cached by the adapter; the console's user is always an admin.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from enum import StrEnum

from bot.domain import Platform
from bot.i18n import N_, Translator


class AdminStatus(StrEnum):
    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"  # the platform could not say (its API did not answer)


AdminCheck = Callable[[], Awaitable[AdminStatus]]
"""Is the user behind this request an admin? Called only where it matters."""


def known(status: AdminStatus) -> AdminCheck:
    """A check whose answer came with the request."""

    async def check() -> AdminStatus:
        return status

    return check


# How long an adapter keeps a platform's answer (Slack's users.info, Discord's member and
# roles for the dashboard), in chat and on the dashboard alike: an admin who is demoted
# on the platform loses the admin commands and pages within this.
ADMIN_CACHE = timedelta(seconds=60)

NOBODY = known(AdminStatus.NO)
EVERYONE = known(AdminStatus.YES)

# Who counts as an admin, in each platform's words.
NOT_ADMIN = {
    Platform.SLACK: N_(
        "Only workspace admins (or users listed in QUIZBOT_ADMINS) can use /quiz {name}."
    ),
    Platform.DISCORD: N_(
        "Only members with the Manage Server permission (or the quiz admin role) can use "
        "/quiz {name}."
    ),
    Platform.CONSOLE: N_("Only admins (users listed in QUIZBOT_ADMINS) can use /quiz {name}."),
}
ADMIN_UNKNOWN = N_(
    "I could not check whether you are an admin ({platform} did not answer), so /quiz {name} "
    "did not run. Try again in a moment; an operator can also add your user id to "
    "QUIZBOT_ADMINS."
)


def admin_refusal(platform: Platform, name: str, status: AdminStatus, t: Translator) -> str:
    """Why an admin-only command, button, form or file did not run, in the platform's
    words (`name`: the command it belongs to)."""
    if status is AdminStatus.UNKNOWN:
        return t(ADMIN_UNKNOWN, platform=platform.value.capitalize(), name=name)
    return t(NOT_ADMIN.get(platform, NOT_ADMIN[Platform.CONSOLE]), name=name)


__all__ = [
    "ADMIN_CACHE",
    "EVERYONE",
    "NOBODY",
    "AdminCheck",
    "AdminStatus",
    "admin_refusal",
    "known",
]
