"""The web dashboard: sign-in with Slack or Discord (or a one-time link for the local
console), sessions, and the pages features register (`bot.pages`), on the bot's server.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from adapters.web.dashboard.oauth import (
    BotGuilds,
    DiscordSignIn,
    OAuthApp,
    Provider,
    SignInError,
    SlackSignIn,
)
from adapters.web.dashboard.site import AdminLookup, Dashboard, DashboardConfig
from bot.domain import Platform
from bot.features import Quiz
from bot.ports import FeatureStore
from bot.signin import WebSessions

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def secure_cookies(public_url: str) -> bool:
    """`Secure` cookies unless the dashboard is plain http on the loopback address."""
    parts = urlsplit(public_url)
    return not (parts.scheme == "http" and parts.hostname in LOOPBACK)


def build_dashboard(
    quiz: Quiz,
    store: FeatureStore,
    sessions: WebSessions,
    *,
    secret: str,
    public_url: str,
    slack: OAuthApp | None = None,
    discord: OAuthApp | None = None,
    bot_guilds: BotGuilds | None = None,
    admins: Mapping[Platform, AdminLookup] | None = None,
    console_user: str = "",
) -> Dashboard:
    """The dashboard `quizbot serve` (and `quizbot web`) mount on their HTTP server.
    `admins`: each signed-in platform's admin rule, asked for every admin request (the
    chat's: `adapters.slack.admins.SlackAdmins`, `adapters.discord.admins.DiscordAdmins`)."""
    admins = admins or {}
    providers: dict[str, Provider] = {}
    if slack is not None:
        if Platform.SLACK not in admins:
            raise ValueError("Slack sign-in needs Slack's admin rule (admins[Platform.SLACK])")
        providers["slack"] = SlackSignIn(slack)
    if discord is not None:
        if bot_guilds is None:
            raise ValueError("Discord sign-in needs the bot's guilds")
        if Platform.DISCORD not in admins:
            raise ValueError(
                "Discord sign-in needs Discord's admin rule (admins[Platform.DISCORD])"
            )
        providers["discord"] = DiscordSignIn(discord, bot_guilds)
    config = DashboardConfig(
        secret.encode(),
        public_url.rstrip("/"),
        secure=secure_cookies(public_url),
        console_user=console_user,
        providers=providers,
    )
    return Dashboard(quiz, store, sessions, config, admins=admins)


__all__ = [
    "AdminLookup",
    "Dashboard",
    "DashboardConfig",
    "DiscordSignIn",
    "OAuthApp",
    "SignInError",
    "SlackSignIn",
    "build_dashboard",
    "secure_cookies",
]
