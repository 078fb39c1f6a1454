"""The adapter's REST client against the fake Discord: what is retried (Discord's own
429s, 5xx, dropped connections), what is not (Cloudflare's 429), and how a failure reaches
the core (a `PlatformError` with method, route and status; counted; no token in the log)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from adapters.discord.rest import DiscordError, DiscordNotInChannel, DiscordRest, route_of
from bot.metrics import QuizMetrics
from storage.store import SqlStore
from tests.adapters.discord.conftest import Runner
from tests.adapters.discord.fake_discord import FakeDiscord
from tests.adapters.discord.helpers import ask, channel_of, said, text_of

USERS_ME = "/users/@me"


@pytest.fixture
async def rest(fake: FakeDiscord) -> AsyncIterator[DiscordRest]:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async with DiscordRest(
        "tok", fake.api_base, metrics=QuizMetrics(), sleep=sleep, max_retry_after=5.0
    ) as client:
        client.waits = waits  # type: ignore[attr-defined]
        yield client


async def test_discords_own_429_is_retried_after_its_retry_after(
    fake: FakeDiscord, rest: DiscordRest
) -> None:
    fake.rate_limit("GET", USERS_ME, retry_after=1.5)
    me = await rest.call("GET", USERS_ME)
    assert me["id"] == fake.app_id
    assert [c.status for c in fake.of("GET", USERS_ME)] == [429, 200]
    assert rest.waits == [1.5]  # type: ignore[attr-defined]


async def test_a_429_without_via_comes_from_cloudflare_and_is_not_retried(
    fake: FakeDiscord, rest: DiscordRest
) -> None:
    fake.fail_text("GET", USERS_ME, 429, "<html>error 1015</html>")
    with pytest.raises(DiscordError) as caught:
        await rest.call("GET", USERS_ME)
    assert caught.value.status == 429 and "error 1015" in caught.value.reason
    assert len(fake.of("GET", USERS_ME)) == 1


async def test_a_retry_after_longer_than_the_call_may_wait_fails_at_once(
    fake: FakeDiscord, rest: DiscordRest
) -> None:
    fake.rate_limit("GET", USERS_ME, retry_after=60)
    with pytest.raises(DiscordError):
        await rest.call("GET", USERS_ME)
    assert rest.waits == []  # type: ignore[attr-defined]


async def test_server_errors_are_retried_and_then_reported_with_method_and_status(
    fake: FakeDiscord, rest: DiscordRest
) -> None:
    fake.fail_text("GET", USERS_ME, 502, "Bad Gateway")
    assert (await rest.call("GET", USERS_ME))["id"] == fake.app_id
    fake.fail_text("GET", USERS_ME, 503, "", times=10)
    with pytest.raises(DiscordError) as caught:
        await rest.call("GET", USERS_ME)
    assert str(caught.value) == "Discord GET /users/@me failed (503): HTTP 503 with an empty body"
    assert rest.metrics is not None
    errors = rest.metrics.platform_errors
    assert errors.value(platform="discord", method="GET /users/@me", status="503") == 1


async def test_a_dropped_connection_is_retried_then_reported(rest: DiscordRest) -> None:
    async with DiscordRest("tok", "http://127.0.0.1:9/api/v10", attempts=2) as closed:
        with pytest.raises(DiscordError) as caught:
            await closed.call("GET", USERS_ME)
    assert caught.value.status is None


async def test_missing_permissions_is_not_in_channel(fake: FakeDiscord, rest: DiscordRest) -> None:
    path = rf"/channels/{fake.channel_id}/messages"
    fake.fail("POST", path, 403, 50013)
    with pytest.raises(DiscordNotInChannel) as caught:
        await rest.call("POST", f"/channels/{fake.channel_id}/messages", {"content": "x"})
    assert caught.value.code == 50013 and caught.value.status == 403


async def test_ask_where_the_bot_may_not_post_says_so_and_keeps_nothing_pending(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore
) -> None:
    fake.fail("POST", rf"/channels/{fake.channel_id}/messages", 403, 50013)
    async with run_adapter():
        inter = await fake.command("ask", user_id="7701")
        (reply,) = await said(fake, inter)
        # In Discord's words: the permissions to grant, not Slack's /invite.
        assert "cannot post in this channel" in text_of(reply)
        assert "View Channel" in text_of(reply) and "/invite" not in text_of(reply)
    open_posts = await store.posts.open_in_channel(channel_of(fake))
    assert open_posts == []


async def test_interaction_tokens_never_reach_the_log(
    fake: FakeDiscord, run_adapter: Runner, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake.fail("POST", r"/interactions/\d+/[\w-]+/callback", 404, 10062, times=5)
    fake.fail("PATCH", r"/webhooks/.*", 404, 10015, times=5)
    async with run_adapter(ack_deadline=0.0) as adapter:
        await ask(fake)  # its callback fails: logged
        inter = await fake.command("help", user_id="7702")
        await fake.until(lambda: bool(fake.callbacks(inter)))
        await adapter.idle()
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("adapters"))
    assert "/interactions/:id/…/callback" in ours
    tokens = {c.path.split("/")[3] for c in fake.calls if c.path.startswith("/interactions/")}
    assert tokens and not any(token in ours for token in tokens)


def test_routes_are_labels_without_ids_or_tokens() -> None:
    assert route_of("POST", "/interactions/123/aW50.ZX-J/callback") == (
        "POST /interactions/:id/…/callback"
    )
    assert route_of("PATCH", "/webhooks/833/tok-1/messages/@original") == (
        "PATCH /webhooks/:id/…/messages/@original"
    )
    assert route_of("POST", "/channels/42/messages/7/threads") == (
        "POST /channels/:id/messages/:id/threads"
    )
