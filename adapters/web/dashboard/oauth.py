"""Sign-in with Slack (OpenID Connect) and Discord (OAuth2), both with state and PKCE.

Each provider builds its authorize URL and turns the callback's code into an `Identity`:
who signed in and the workspaces they may open. The user's access token is used for
those calls only and never kept, logged or shown. Platform answers that are not what the
platform sends are a `SignInError` with a message safe to show.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import aiohttp

from adapters.web.dashboard.tokens import pkce_challenge
from bot.domain import Platform
from bot.signin import Membership

log = logging.getLogger(__name__)

TIMEOUT = aiohttp.ClientTimeout(total=10)


class SignInError(Exception):
    """The sign-in did not complete; the message says why, safely."""


@dataclass(frozen=True, slots=True)
class Identity:
    platform: Platform
    user: str
    name: str
    workspaces: tuple[Membership, ...]


@dataclass(frozen=True, slots=True)
class OAuthApp:
    client_id: str
    client_secret: str
    api: str  # Slack: the Web API base (…/api/); Discord: the REST base (…/api/v10)


def site_of(api: str, path: str) -> str:
    """The provider's web page `path` on the API's host (https://slack.com/api/ ->
    https://slack.com/<path>): the fakes in tests serve both on one port."""
    parts = urlsplit(api)
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


class SlackSignIn:
    """Sign in with Slack: `openid.connect.token` (with the PKCE verifier), then
    `openid.connect.userInfo`, whose ``https://slack.com/team_id`` names the workspace."""

    platform = Platform.SLACK
    scopes = ("openid", "profile")

    def __init__(self, app: OAuthApp) -> None:
        self.app = app
        self.api = app.api if app.api.endswith("/") else app.api + "/"

    def authorize_url(self, state: str, verifier: str, redirect: str) -> str:
        query = {
            "response_type": "code",
            "scope": " ".join(self.scopes),
            "client_id": self.app.client_id,
            "state": state,
            "redirect_uri": redirect,
            "code_challenge": pkce_challenge(verifier),
            "code_challenge_method": "S256",
        }
        return f"{site_of(self.api, '/openid/connect/authorize')}?{urlencode(query)}"

    async def identify(self, code: str, verifier: str, redirect: str) -> Identity:
        async with aiohttp.ClientSession(timeout=TIMEOUT) as http:
            token = await _slack(
                http,
                self.api + "openid.connect.token",
                data={
                    "client_id": self.app.client_id,
                    "client_secret": self.app.client_secret,
                    "code": code,
                    "redirect_uri": redirect,
                    "code_verifier": verifier,
                    "grant_type": "authorization_code",
                },
            )
            access = token.get("access_token")
            if not isinstance(access, str):
                raise SignInError("Slack gave no access token")
            info = await _slack(
                http,
                self.api + "openid.connect.userInfo",
                headers={"Authorization": f"Bearer {access}"},
            )
        user = info.get("https://slack.com/user_id") or info.get("sub")
        team = info.get("https://slack.com/team_id")
        if not isinstance(user, str) or not isinstance(team, str):
            raise SignInError("Slack's answer named no user or workspace")
        name = str(info.get("name") or info.get("given_name") or user)
        team_name = str(info.get("https://slack.com/team_name") or team)
        # Admin status is asked per request (users.info), as in chat.
        return Identity(Platform.SLACK, user, name, (Membership(team, team_name, None),))


async def _slack(http: aiohttp.ClientSession, url: str, **kw: Any) -> dict[str, Any]:
    try:
        async with http.post(url, **kw) as resp:
            body = await resp.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise SignInError(f"Slack did not answer ({type(exc).__name__})") from None
    if not isinstance(body, dict) or not body.get("ok"):
        error = body.get("error") if isinstance(body, dict) else None
        raise SignInError(f"Slack refused the sign-in ({str(error or 'no answer')[:60]})")
    return body


BotGuilds = Callable[[], Awaitable[set[str]]]


class DiscordSignIn:
    """Discord OAuth2: ``identify`` and ``guilds``. Only the guilds the bot is in are
    kept. Who is an admin is asked per request with the bot's token
    (`adapters.discord.admins.DiscordAdmins`), not at sign-in."""

    platform = Platform.DISCORD
    scopes = ("identify", "guilds")

    def __init__(self, app: OAuthApp, bot_guilds: BotGuilds) -> None:
        self.app = app
        self.api = app.api.rstrip("/")
        self.bot_guilds = bot_guilds

    def authorize_url(self, state: str, verifier: str, redirect: str) -> str:
        query = {
            "response_type": "code",
            "client_id": self.app.client_id,
            "scope": " ".join(self.scopes),
            "state": state,
            "redirect_uri": redirect,
            "code_challenge": pkce_challenge(verifier),
            "code_challenge_method": "S256",
            "prompt": "none",
        }
        return f"{site_of(self.api, '/oauth2/authorize')}?{urlencode(query)}"

    async def identify(self, code: str, verifier: str, redirect: str) -> Identity:
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect,
            "code_verifier": verifier,
        }
        pair = f"{self.app.client_id}:{self.app.client_secret}".encode()
        auth = {"Authorization": "Basic " + base64.b64encode(pair).decode()}
        async with aiohttp.ClientSession(timeout=TIMEOUT) as http:
            token = await _discord(
                http, "POST", self.api + "/oauth2/token", data=form, headers=auth
            )
            access = token.get("access_token") if isinstance(token, dict) else None
            if not isinstance(access, str):
                raise SignInError("Discord gave no access token")
            bearer = {"Authorization": f"Bearer {access}"}
            me = await _discord(http, "GET", self.api + "/users/@me", headers=bearer)
            guilds = await _discord(http, "GET", self.api + "/users/@me/guilds", headers=bearer)
            if not isinstance(me, dict) or not isinstance(guilds, list):
                raise SignInError("Discord's answer is not a user and a server list")
            ours = await self.bot_guilds()
            kept = [
                Membership(str(g["id"]), str(g.get("name") or g["id"]), None)
                for g in guilds
                if isinstance(g, dict) and str(g.get("id")) in ours
            ]
        user = str(me.get("id") or "")
        if not user:
            raise SignInError("Discord's answer named no user")
        name = str(me.get("global_name") or me.get("username") or user)
        return Identity(Platform.DISCORD, user, name, tuple(kept))


async def _discord(http: aiohttp.ClientSession, method: str, url: str, **kw: Any) -> Any:
    try:
        async with http.request(method, url, **kw) as resp:
            body = await resp.json(content_type=None)
            status = resp.status
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise SignInError(f"Discord did not answer ({type(exc).__name__})") from None
    if status >= 400:
        raise SignInError(f"Discord refused the sign-in (HTTP {status})")
    return body


Provider = SlackSignIn | DiscordSignIn

__all__ = [
    "DiscordSignIn",
    "Identity",
    "OAuthApp",
    "Provider",
    "SignInError",
    "SlackSignIn",
    "site_of",
]
