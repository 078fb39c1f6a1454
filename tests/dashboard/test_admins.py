"""Who is an admin on the dashboard: the chat's own rule, asked on the server for every
admin request — Slack's users.info (and QUIZBOT_ADMINS), Discord's server roles read
with the bot's token (Manage Server, Administrator, the owner, the admin role) — each
answer kept `ADMIN_CACHE` (a minute, as in chat) at most. An admin demoted on the
platform is refused on the first admin request after that, whatever their session says;
a platform that cannot answer gets the chat's "could not check" refusal."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.admin import ADMIN_CACHE, AdminStatus
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import ChannelRef, Platform, UserRef
from tests.adapters.discord.fake_discord import FakeDiscord
from tests.adapters.discord.fake_oauth import MANAGE_GUILD
from tests.adapters.slack.fake_slack import FakeSlack
from tests.dashboard.harness import Site, platform_admins, site_of

SLACK_WS = ChannelRef(Platform.SLACK, "T0FAKE", "C1")
GUILD = "811111111111111111"
DISCORD_WS = ChannelRef(Platform.DISCORD, GUILD, "700")
ALICE = UserRef(Platform.SLACK, "T0FAKE", "UALICE", "alice")
BEA = UserRef(Platform.DISCORD, GUILD, "9001", "bea")
JUST_OVER = ADMIN_CACHE + timedelta(seconds=1)


async def status_of(site: Site, client: Any, ws: ChannelRef, page: str) -> int:
    async with client.get(f"/w/{ws.platform}/{ws.workspace}/{page}") as resp:
        return int(resp.status)


async def refusal(client: Any, ws: ChannelRef, page: str = "review") -> str:
    """The text of `page`, which must be refused (403)."""
    async with client.get(f"/w/{ws.platform}/{ws.workspace}/{page}") as resp:
        assert resp.status == 403
        return str(await resp.text())


SiteWith = Callable[..., AbstractAsyncContextManager[Site]]


@pytest.fixture
def site_with(
    store: Any, bank: QuestionBank, clock: FakeClock, slack: FakeSlack, discord: FakeDiscord
) -> SiteWith:
    """The site with the platforms' own rules (`rule`: admin_ids, admin_role)."""

    @asynccontextmanager
    async def opened(**rule: Any) -> AsyncIterator[Site]:
        async with (
            platform_admins(slack, discord, clock, **rule) as admins,
            site_of(store, bank, clock, channels=(SLACK_WS, DISCORD_WS), admins=admins) as site,
        ):
            yield site

    return opened


async def test_a_slack_admin_demoted_in_slack_is_refused_after_the_cache_minute(
    site_with: SiteWith, slack: FakeSlack, clock: FakeClock
) -> None:
    slack.add_user(ALICE.user, admin=True)
    async with site_with() as site, site.client() as client:
        await site.sign_in(client, ALICE, admin=None)  # the session holds no admin status
        assert await status_of(site, client, SLACK_WS, "review") == 200
        slack.users[ALICE.user]["is_admin"] = False  # demoted in Slack
        clock.advance(ADMIN_CACHE - timedelta(seconds=1))
        assert await status_of(site, client, SLACK_WS, "schedules") == 200  # kept, as in chat
        clock.advance(timedelta(seconds=2))
        assert "Only workspace admins" in await refusal(client, SLACK_WS)  # the chat's words
        assert await status_of(site, client, SLACK_WS, "") == 200  # still a member
        slack.users[ALICE.user]["is_owner"] = True  # promoted again
        clock.advance(JUST_OVER)
        assert await status_of(site, client, SLACK_WS, "review") == 200


async def test_quizbot_admins_count_and_a_silent_slack_is_the_chats_could_not_check(
    site_with: SiteWith, slack: FakeSlack, clock: FakeClock
) -> None:
    slack.add_user(ALICE.user)
    slack.add_user("ULISTED")
    listed = UserRef(Platform.SLACK, SLACK_WS.workspace, "ULISTED", "lee")
    async with site_with(admin_ids=frozenset({"ULISTED"})) as site:
        async with site.client() as client:
            await site.sign_in(client, listed, admin=None)
            assert await status_of(site, client, SLACK_WS, "review") == 200
        async with site.client() as client:
            await site.sign_in(client, ALICE, admin=None)
            slack.fail("users.info", "internal_error")
            assert "could not check whether you are an admin" in await refusal(client, SLACK_WS)
            assert await status_of(site, client, SLACK_WS, "review") == 403  # Slack: not one


async def test_a_discord_admin_demoted_in_the_server_is_refused_after_the_cache_minute(
    site_with: SiteWith, discord: FakeDiscord, clock: FakeClock
) -> None:
    discord.roles["42"] = MANAGE_GUILD
    discord.members[BEA.user] = ["42"]
    async with site_with() as site, site.client() as client:
        await site.sign_in(client, BEA, admin=None)
        assert await status_of(site, client, DISCORD_WS, "review") == 200
        discord.members[BEA.user] = []  # the role taken away in Discord
        assert await status_of(site, client, DISCORD_WS, "review") == 200  # kept a minute
        clock.advance(JUST_OVER)
        assert "Manage Server" in await refusal(client, DISCORD_WS)  # the chat's words
        assert await status_of(site, client, DISCORD_WS, "") == 200
        discord.roles[GUILD] = 1 << 3  # Administrator for @everyone
        clock.advance(JUST_OVER)
        assert await status_of(site, client, DISCORD_WS, "review") == 200
        discord.roles[GUILD] = 0
        del discord.members[BEA.user]  # left the server
        clock.advance(JUST_OVER)
        assert await status_of(site, client, DISCORD_WS, "review") == 403


async def test_discords_owner_and_admin_role_count_and_a_silent_discord_cannot_say(
    site_with: SiteWith, discord: FakeDiscord, clock: FakeClock
) -> None:
    discord.members[BEA.user] = ["77"]
    async with site_with(admin_role="77") as site, site.client() as client:
        await site.sign_in(client, BEA, admin=None)
        assert await status_of(site, client, DISCORD_WS, "review") == 200  # the admin role
        discord.members[BEA.user] = []
        discord.owner_id = BEA.user
        clock.advance(JUST_OVER)
        assert await status_of(site, client, DISCORD_WS, "review") == 200  # the owner
        clock.advance(JUST_OVER)
        discord.fail("GET", f"/guilds/{GUILD}", 500, 0, times=2)
        assert "could not check whether you are an admin" in await refusal(client, DISCORD_WS)
        assert await status_of(site, client, DISCORD_WS, "review") == 200  # answered again


async def test_serve_gives_the_dashboard_each_platforms_own_rule(
    discord: FakeDiscord, tmp_path: Path
) -> None:
    """`quizbot serve`'s wiring (`bot.app._dashboard`): Discord's rule reads the server
    with the bot's REST client, with QUIZBOT_ADMINS and QUIZBOT_DISCORD_ADMIN_ROLE."""
    from adapters.discord.admins import DiscordAdmins
    from adapters.discord.rest import DiscordRest
    from bot.app import _dashboard, build_core
    from bot.config import Settings

    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
        runner="off",
        web_secret="w" * 40,
        public_url="https://quiz.example.com",
        discord_client_id="555",
        discord_client_secret="s",
        discord_token="t",
        discord_admin_role=77,
        admins="424242",
    )  # type: ignore[call-arg]
    async with (
        build_core(settings, {}) as core,
        DiscordRest("t", discord.api_base, attempts=1) as rest,
    ):
        dashboard = _dashboard(core, settings, slack_admin=None, rest=rest)
        rule = dashboard.pages.admins[Platform.DISCORD]
        assert isinstance(rule, DiscordAdmins)
        discord.members[BEA.user] = ["77"]
        assert await rule(BEA) is AdminStatus.YES  # the admin role, read from the server
        listed = UserRef(Platform.DISCORD, GUILD, "424242", "lee")
        assert await rule(listed) is AdminStatus.YES  # QUIZBOT_ADMINS, no call needed
        assert Platform.SLACK not in dashboard.pages.admins  # no Slack adapter, no sign-in
