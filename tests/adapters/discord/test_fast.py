"""Answer clicks on the fast path: acknowledged from the raw gateway payload (a deferred
private response), recorded after, and the outcome put in place of "thinking…" — exactly
one initial response per click, whatever Discord answers."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.discord.fast import _redacted
from tests.adapters.discord.conftest import Runner
from tests.adapters.discord.fake_discord import EPHEMERAL, FakeDiscord
from tests.adapters.discord.helpers import ask, custom_ids, said, text_of

DEFERRED = {"type": 5, "data": {"flags": EPHEMERAL}}


def original_edits(fake: FakeDiscord, token: str) -> list[Any]:
    return fake.of("PATCH", rf"/webhooks/{fake.app_id}/{token}/messages/@original")


async def test_a_burst_of_clicks_gets_one_deferral_and_one_outcome_each(
    fake: FakeDiscord, run_adapter: Runner, store: object
) -> None:
    async with run_adapter() as adapter:
        message, post_id = await ask(fake)
        ids = custom_ids(message)
        clicks = [
            fake.click_payload(message["id"], ids[i % len(ids)], user_id=str(50_000 + i))
            for i in range(40)
        ]
        for click in clicks:  # back to back: the bot reads them from one buffer
            await fake.dispatch("INTERACTION_CREATE", click)
        for click in clicks:
            (reply,) = await said(fake, click)
            assert reply["flags"] == EPHEMERAL
            assert "✅ Correct" in text_of(reply) or "❌ Not quite" in text_of(reply)
            assert [c.json for c in fake.callbacks(click)] == [DEFERRED]
            assert len(original_edits(fake, click["token"])) == 1
        # discord.py never answered them too (Discord would refuse it: 40060).
        assert [c for c in fake.calls if c.status >= 300] == []
        assert adapter.fast.acknowledged == 40
        answers = await store.answers.for_post(post_id)  # type: ignore[attr-defined]
        assert len(answers) == 40


async def test_an_expired_click_is_still_recorded_and_nothing_is_edited(
    fake: FakeDiscord, run_adapter: Runner, store: object
) -> None:
    async with run_adapter() as adapter:
        message, post_id = await ask(fake)
        fake.fail("POST", r"/interactions/\d+/[\w-]+/callback", 404, 10062)  # Unknown interaction
        click = await fake.click(message["id"], custom_ids(message)[0], user_id="7101")
        await fake.until(lambda: bool(fake.callbacks(click)))
        await adapter.fast.drain(timeout=10)
        (callback,) = fake.callbacks(click)
        assert callback.status == 404
        assert original_edits(fake, click["token"]) == []
        answers = await store.answers.for_post(post_id)  # type: ignore[attr-defined]
        assert [a.user.user for a in answers] == ["7101"]


async def test_a_rate_limited_deferral_is_retried(fake: FakeDiscord, run_adapter: Runner) -> None:
    async with run_adapter():
        message, _ = await ask(fake)
        fake.rate_limit("POST", r"/interactions/\d+/[\w-]+/callback", retry_after=0.01)
        click = await fake.click(message["id"], custom_ids(message)[1], user_id="7102")
        (reply,) = await said(fake, click)
        assert [c.status for c in fake.callbacks(click)] == [429, 204]
        assert "Correct" in text_of(reply) or "Not quite" in text_of(reply)


class _BrokenService:
    async def record_answer(self, *args: object, **kwargs: object) -> Any:
        raise RuntimeError("database gone")


async def test_a_failed_recording_tells_the_user_in_their_language(
    fake: FakeDiscord, run_adapter: Runner, caplog: pytest.LogCaptureFixture
) -> None:
    async with run_adapter() as adapter:
        message, _ = await ask(fake)
        adapter.fast.service = _BrokenService()  # type: ignore[assignment]
        click = await fake.click(message["id"], custom_ids(message)[0], user_id="7103", locale="el")
        (reply,) = await said(fake, click)
        assert reply["flags"] == EPHEMERAL
        assert "Κάτι πήγε στραβά" in text_of(reply)
        assert "recording a click on post" in caplog.text


async def test_a_click_on_another_button_is_left_to_discord_py(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter() as adapter:
        message, _ = await ask(fake)
        click = await fake.click(message["id"], "quiz:answer:not-a-post:0", user_id="7104")
        other = await fake.click(message["id"], custom_ids(message)[0], user_id="7105")
        await said(fake, other)  # read after the malformed one, on the same connection
        assert fake.callbacks(click) == [] and adapter.fast.acknowledged == 1


def test_tokens_are_kept_out_of_the_logs() -> None:
    base = "https://discord.com/api/v10"
    assert _redacted(f"{base}/interactions/123/aW50ZXJh.Y3Rpb24-x/callback") == (
        f"{base}/interactions/123/…/callback"
    )
    assert _redacted(f"{base}/webhooks/833/aW50ZXJh/messages/@original") == (
        f"{base}/webhooks/833/…/messages/@original"
    )
