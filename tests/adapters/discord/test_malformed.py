"""Input Discord would not send, and clicks that name nothing valid: each is answered with
a clear private line or dropped (logged once per interval, counted), nothing is stored,
and the adapter keeps serving — over the gateway and the HTTP endpoint."""

from __future__ import annotations

from typing import Any

import pytest

from bot.domain import ChannelRef, Platform
from storage.store import SqlStore
from tests.adapters.discord.conftest import Runner, both_modes
from tests.adapters.discord.fake_discord import EPHEMERAL, FakeDiscord
from tests.adapters.discord.helpers import ask, custom_ids, said, text_of
from tests.quiz import asked

Json = dict[str, Any]


def _without(payload: Json, *keys: str) -> Json:
    return {k: v for k, v in payload.items() if k not in keys}


# (what is wrong, how to break a valid click, the kind it is counted under)
BROKEN = [
    ("type 3 without data", lambda p: _without(p, "data"), "no data"),
    ("no member or user", lambda p: _without(p, "member", "user"), "no member or user"),
    ("no token", lambda p: _without(p, "token"), "no token"),
    ("unknown type", lambda p: {**p, "type": 9}, "unknown type"),
    ("a modal submit", lambda p: {**p, "type": 5}, "unknown type"),
    ("not an object", lambda p: [p], "not an object"),
    ("null", lambda p: None, "not an object"),
]


async def send_raw(fake: FakeDiscord, mode: str, raw: Any) -> int | None:
    """What Discord would never send: the bot's HTTP status (HTTP mode), else None."""
    if mode == "http":
        status, _ = await fake.http.post(raw)
        return status
    await fake.send_frame("INTERACTION_CREATE", raw)
    return None


@both_modes
async def test_malformed_interactions_are_dropped_counted_and_the_bot_goes_on(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore, mode: str
) -> None:
    async with run_adapter() as adapter:
        message, post_id = await ask(fake)
        valid = custom_ids(message)[0]
        for _, breaking, _ in BROKEN:
            raw = breaking(fake.click_payload(message["id"], valid, user_id="7201"))
            status = await send_raw(fake, mode, raw)
            assert status in (None, 400)
        # The next real click is answered as usual (the gateway reads frames in order).
        click = await fake.click(message["id"], valid, user_id="7202")
        (reply,) = await said(fake, click)
        assert "Correct" in text_of(reply) or "Not quite" in text_of(reply)
        assert await adapter.healthy()
        answers = await store.answers.for_post(post_id)
        assert [a.user.user for a in answers] == ["7202"]
        dropped = adapter.service.metrics.dropped_payloads
        for _, _, kind in BROKEN:
            assert dropped.value(platform="discord", kind=kind) >= 1, kind
        # Only the valid click and the ask were answered.
        assert len([c for c in fake.calls if c.path.endswith("/callback")]) == 2


@both_modes
@pytest.mark.parametrize(
    ("custom_id", "expected"),
    [
        ("another-app:vote:1", "not available any more"),
        (f"quiz:answer:{2**64}:0", "not available any more"),
        ("quiz:answer:{post}:x", "not part of this question"),
        ("quiz:answer:{post}:17", "not part of this question"),
        ("quiz:nonsense:{post}:0", "not available any more"),
    ],
)
async def test_clicks_naming_nothing_valid_get_a_clear_private_line(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore, custom_id: str, expected: str
) -> None:
    async with run_adapter():
        message, post_id = await ask(fake)
        click = await fake.click(message["id"], custom_id.format(post=post_id), user_id="7203")
        (reply,) = await said(fake, click)
        assert reply["flags"] == EPHEMERAL and expected in text_of(reply)
        assert await store.answers.for_post(post_id) == []


@both_modes
async def test_a_click_on_a_post_of_another_channel_is_refused(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore
) -> None:
    elsewhere = ChannelRef(Platform.DISCORD, fake.guild_id, "899999999999999999")
    async with run_adapter() as adapter:
        post = await asked(adapter.service, elsewhere)
        # The button of that post, clicked in this channel (a forged or copied id).
        message, _ = await ask(fake)
        click = await fake.click(message["id"], f"quiz:answer:{post.id}:0", user_id="7204")
        (reply,) = await said(fake, click)
        assert reply["flags"] == EPHEMERAL and "question of another channel" in text_of(reply)
        assert await store.answers.for_post(post.id) == []
