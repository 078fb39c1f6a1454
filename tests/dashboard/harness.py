"""The dashboard served in-process on 127.0.0.1, over the real registry and store, and
signed-in browsers for it (aiohttp clients with a cookie jar)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import aiohttp
from yarl import URL

from adapters.web import WebServer
from adapters.web.dashboard import AdminLookup, Dashboard, OAuthApp, build_dashboard
from adapters.web.dashboard.site import COOKIE
from adapters.web.dashboard.tokens import digest, new_token, sign
from bot.admin import AdminStatus
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import ChannelRef, Platform, UserRef
from bot.features import Quiz
from bot.metrics import MetricsRegistry
from bot.ports import Runner
from bot.signin import Membership, WebSession
from tests.adapters.discord.fake_discord import FakeDiscord
from tests.adapters.slack.fake_slack import FakeSlack
from tests.fakes import RecordingChat
from tests.quiz import quiz_of

SECRET = "s" * 40
A = ChannelRef(Platform.SLACK, "TA", "CA1")
A2 = ChannelRef(Platform.SLACK, "TA", "CA2")
B = ChannelRef(Platform.SLACK, "TB", "CB1")


class Roster:
    """A platform's admin rule as a test states it (`Site.sign_in`'s `admin`): the lookup
    the dashboard asks for every admin request. Tests of the platforms' own rules use
    `platform_admins` instead."""

    def __init__(self) -> None:
        self.admins: dict[str, bool] = {}

    async def __call__(self, user: UserRef) -> AdminStatus:
        return AdminStatus.YES if self.admins.get(user.key) else AdminStatus.NO


@dataclass
class Site:
    quiz: Quiz
    store: Any
    dashboard: Dashboard
    server: WebServer
    chat: RecordingChat
    roster: Roster

    @property
    def url(self) -> str:
        return self.server.url

    def client(self, **kw: Any) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            base_url=self.url, cookie_jar=aiohttp.CookieJar(unsafe=True), **kw
        )

    async def sign_in(
        self,
        client: aiohttp.ClientSession,
        user: UserRef,
        *,
        admin: bool | None,
        workspaces: tuple[Membership, ...] | None = None,
    ) -> str:
        """A session for `user` (as a sign-in would make it: the admin rule is the
        platform's, asked per request; `admin` is what the roster says); the CSRF token."""
        now = self.quiz.service.clock.now()
        for m in workspaces or (Membership(user.workspace),):
            self.roster.admins[UserRef(user.platform, m.workspace, user.user).key] = bool(admin)
        token = new_token()
        session = WebSession(
            platform=user.platform,
            user=user.user,
            name=user.display,
            workspaces=workspaces or (Membership(user.workspace, user.workspace, None),),
            csrf=new_token(),
            created_at=now,
            expires_at=now + timedelta(hours=12),
        )
        await self.store.web.create(digest(token), session)
        client.cookie_jar.update_cookies({COOKIE: sign(SECRET.encode(), token)}, URL(self.url))
        return session.csrf


@asynccontextmanager
async def site_of(
    store: Any,
    bank: QuestionBank,
    clock: FakeClock,
    *,
    runner: Runner | None = None,
    slack: OAuthApp | None = None,
    discord: OAuthApp | None = None,
    bot_guilds: Any = None,
    admins: Mapping[Platform, AdminLookup] | None = None,
    console_user: str = "",
    channels: tuple[ChannelRef, ...] = (A, A2, B),
    **parts: Any,
) -> AsyncIterator[Site]:
    chat = RecordingChat()
    chats = {p: chat for p in Platform}
    async with quiz_of(store, chats, bank, clock, runner=runner, **parts) as quiz:
        for channel in channels:
            await store.settings.save(await store.settings.get(channel))
        server = WebServer(MetricsRegistry(), port=0, host="127.0.0.1")
        roster = Roster()
        dashboard = build_dashboard(
            quiz,
            store,
            store.web,
            secret=SECRET,
            public_url="http://127.0.0.1:1",
            slack=slack,
            discord=discord,
            bot_guilds=bot_guilds,
            admins={Platform.SLACK: roster, Platform.DISCORD: roster, **(admins or {})},
            console_user=console_user,
        )
        dashboard.mount(server.app)
        async with server:
            dashboard.config = replace(dashboard.config, public_url=server.url)
            yield Site(quiz, store, dashboard, server, chat, roster)


@asynccontextmanager
async def platform_admins(
    slack: FakeSlack, discord: FakeDiscord, clock: FakeClock, **rule: Any
) -> AsyncIterator[dict[Platform, AdminLookup]]:
    """The chat's own admin rules over the fake platforms (`SlackAdmins`: users.info;
    `DiscordAdmins`: the server's roles with the bot's token), for `site_of(admins=…)`.
    `rule`: `admin_ids`, and Discord's `admin_role`."""
    from adapters.discord.admins import DiscordAdmins
    from adapters.discord.rest import DiscordRest
    from adapters.slack import SlackChat
    from adapters.slack.admins import SlackAdmins

    ids = rule.get("admin_ids", ())
    async with (
        SlackChat(slack.bot_token, base_url=slack.api_url) as chat,
        DiscordRest("bot-token", discord.api_base, attempts=1) as rest,
    ):
        yield {
            Platform.SLACK: SlackAdmins(chat, clock, ids),
            Platform.DISCORD: DiscordAdmins(
                rest, clock, admin_role=rule.get("admin_role"), admin_ids=ids
            ),
        }


def member(channel: ChannelRef, name: str) -> UserRef:
    return UserRef(channel.platform, channel.workspace, f"U{name.upper()}", name)


__all__ = ["A2", "SECRET", "A", "B", "Roster", "Site", "member", "platform_admins", "site_of"]
