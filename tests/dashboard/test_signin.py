"""Sign in with Slack (OpenID Connect) and Discord (OAuth2) against the fake platforms:
state and PKCE kept in the database and taken once, the workspace from Slack's
``team_id`` claim, only the Discord servers the bot is in, admins by the chat's rule;
signed cookies; sign-in attempts limited; no secret or token in a page or a URL."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from adapters.web.dashboard import OAuthApp
from adapters.web.dashboard.site import COOKIE
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import ChannelRef, Platform
from tests.adapters.discord.fake_discord import FakeDiscord
from tests.adapters.discord.fake_oauth import CLIENT_ID as DISCORD_ID
from tests.adapters.discord.fake_oauth import CLIENT_SECRET as DISCORD_SECRET
from tests.adapters.discord.fake_oauth import MANAGE_GUILD
from tests.adapters.slack.fake_oidc import CLIENT_ID as SLACK_ID
from tests.adapters.slack.fake_oidc import CLIENT_SECRET as SLACK_SECRET
from tests.adapters.slack.fake_slack import FakeSlack
from tests.dashboard.harness import Site, platform_admins, site_of

SLACK_WS = ChannelRef(Platform.SLACK, "T0FAKE", "C1")
GUILD = "811111111111111111"
DISCORD_WS = ChannelRef(Platform.DISCORD, GUILD, "700")


@pytest.fixture
async def oauth_site(
    store: Any, bank: QuestionBank, clock: FakeClock, slack: FakeSlack, discord: FakeDiscord
) -> AsyncIterator[Site]:
    async def bot_guilds() -> set[str]:
        return {GUILD}

    async with (
        platform_admins(slack, discord, clock) as admins,
        site_of(
            store,
            bank,
            clock,
            slack=OAuthApp(SLACK_ID, SLACK_SECRET, slack.api_url),
            discord=OAuthApp(DISCORD_ID, DISCORD_SECRET, discord.api_base),
            bot_guilds=bot_guilds,
            admins=admins,
            channels=(SLACK_WS, DISCORD_WS),
        ) as s,
    ):
        yield s


COOKIES: list[str] = []


async def follow(client: Any, url: str, hops: int = 6) -> tuple[int, str, list[str]]:
    """Follow redirects by hand across the fake platform and the site; the URLs seen (and
    every Set-Cookie header in `COOKIES`)."""
    seen = []
    COOKIES.clear()
    for _ in range(hops):
        async with client.get(url, allow_redirects=False) as resp:
            seen.append(url)
            COOKIES.extend(resp.headers.getall("Set-Cookie", []))
            if resp.status not in (302, 303):
                return resp.status, await resp.text(), seen
            url = resp.headers["Location"]
    raise AssertionError(f"too many redirects: {seen}")


async def test_sign_in_with_slack_opens_the_workspace_named_by_the_team_id_claim(
    oauth_site: Site, slack: FakeSlack
) -> None:
    async with oauth_site.client() as client:
        status, html, seen = await follow(client, "/login/slack")
        assert status == 200
        assert seen[-1].endswith("/w/slack/T0FAKE/")
        authorize = slack.oidc.authorized[0]
        assert authorize["code_challenge_method"] == "S256" and authorize["code_challenge"]
        assert authorize["scope"] == "openid profile"
        token_calls = slack.calls_to("openid.connect.token")
        assert token_calls and token_calls[0].args["code_verifier"]
        (cookie,) = [c for c in COOKIES if c.startswith(COOKIE + "=")]
        assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/" in cookie
        assert "Secure" not in cookie  # plain http on 127.0.0.1: the only case without it
        for secret in (SLACK_SECRET, token_calls[0].response["access_token"]):
            assert secret not in html and all(secret not in u for u in seen)


async def test_a_callback_state_works_once_and_only_for_its_provider(oauth_site: Site) -> None:
    async with oauth_site.client() as client:
        callback = await _slack_callback(client)
        query = parse_qs(urlsplit(callback).query)
        wrong = f"/auth/discord/callback?code={query['code'][0]}&state={query['state'][0]}"
        async with client.get(wrong, allow_redirects=False) as resp:
            assert resp.status == 400  # a Slack state is no Discord sign-in (and is now spent)
        async with client.get(callback, allow_redirects=False) as resp:
            assert resp.status == 400
            assert "expired or was used already" in await resp.text()
        assert not any(c.key == COOKIE for c in client.cookie_jar)


async def test_a_replayed_callback_is_refused_after_the_first_sign_in(oauth_site: Site) -> None:
    async with oauth_site.client() as client:
        callback = await _slack_callback(client)
        async with client.get(callback, allow_redirects=False) as resp:
            assert resp.status == 303
    async with oauth_site.client() as other, other.get(callback, allow_redirects=False) as resp:
        assert resp.status == 400


async def test_an_expired_sign_in_is_refused(oauth_site: Site, clock: FakeClock) -> None:
    from datetime import timedelta

    async with oauth_site.client() as client:
        callback = await _slack_callback(client)
        clock.advance(timedelta(minutes=11))
        async with client.get(callback, allow_redirects=False) as resp:
            assert resp.status == 400


async def test_discord_sign_in_keeps_only_the_bots_servers_and_their_admin_rule(
    oauth_site: Site, discord: FakeDiscord
) -> None:
    discord.oauth.member.guilds = {
        GUILD: ("Fake Guild", MANAGE_GUILD, []),
        "999": ("Not the bot's", MANAGE_GUILD, []),
    }
    discord.roles["42"] = MANAGE_GUILD  # what the bot reads of the server, per request
    discord.members[discord.oauth.member.id] = ["42"]
    async with oauth_site.client() as client:
        status, _, seen = await follow(client, "/login/discord")
        assert status == 200 and seen[-1].endswith(f"/w/discord/{GUILD}/")
        async with client.get(f"/w/discord/{GUILD}/review") as resp:
            assert resp.status == 200  # Manage Server: an admin, as in chat
        async with client.get("/w/discord/999/", allow_redirects=False) as resp:
            assert resp.status == 404
    assert discord.oauth.authorized[0]["scope"] == "identify guilds"


async def test_a_discord_member_without_manage_server_is_refused_the_admin_pages(
    oauth_site: Site, discord: FakeDiscord
) -> None:
    discord.oauth.member.guilds = {GUILD: ("Fake Guild", 0, [])}
    discord.members[discord.oauth.member.id] = []
    async with oauth_site.client() as client:
        await follow(client, "/login/discord")
        async with client.get(f"/w/discord/{GUILD}/review") as resp:
            assert resp.status == 403
            assert "Manage Server" in await resp.text()
        async with client.get(f"/w/discord/{GUILD}/") as resp:
            assert resp.status == 200


async def test_sign_in_attempts_are_limited_per_client(oauth_site: Site) -> None:
    limit = oauth_site.dashboard.config.sign_ins_per_minute
    async with oauth_site.client() as client:
        statuses = []
        for _ in range(limit + 2):
            async with client.get("/login/slack", allow_redirects=False) as resp:
                statuses.append(resp.status)
        assert statuses[:limit] == [303] * limit
        assert statuses[limit:] == [429, 429]


async def test_no_secret_or_token_reaches_the_log(
    oauth_site: Site, slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    slack.oidc.member = ("UANN", "T0NOTOURS", "Ann")  # a workspace the bot is not in
    caplog.set_level(logging.INFO)
    async with oauth_site.client() as client:
        status, html, seen = await follow(client, "/login/slack")
    assert status == 403  # the quiz is in none of their workspaces: nothing to open
    text = caplog.text + html + " ".join(seen[-1:])
    for call in slack.calls_to("openid.connect.token", ok_only=False):
        assert call.response.get("access_token", "-") not in text
    assert SLACK_SECRET not in text and DISCORD_SECRET not in text


async def _slack_callback(client: Any) -> str:
    """The callback URL the fake Slack sends the browser back to, not yet followed."""
    async with client.get("/login/slack", allow_redirects=False) as resp:
        authorize = resp.headers["Location"]
    async with client.get(authorize, allow_redirects=False) as resp:
        return str(resp.headers["Location"])
