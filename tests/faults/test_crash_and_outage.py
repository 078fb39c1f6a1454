"""Acknowledged => durable, with real processes: `quizbot serve` (Slack HTTP mode) killed
with SIGKILL in the middle of a burst of clicks, and PostgreSQL refusing connections while
clicks arrive. After either, every acknowledged click is stored or its user was told to
click again; nothing is stored twice; and everyone can answer once the fault is gone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.fake_slack import FakeSlack
from tests.faults.harness import (
    RETRY_TEXT,
    BotProcess,
    ask,
    burst_until_killed,
    click,
    proxied_bot,
    stored_answers,
    told,
    unlimited_client,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

CLICKS = 600


async def test_sigkill_mid_burst_loses_no_acknowledged_click(db_url: str, tmp_path: Path) -> None:
    users = [f"U{i:05d}" for i in range(CLICKS)]
    async with FakeSlack(team=rq.TEAM) as fake, unlimited_client() as http:
        bot = BotProcess(db_url, fake.api_url, tmp_path / "bot.log")
        await bot.start()
        post_id = await ask(http, bot, fake, rq.CHANNEL)
        burst = await burst_until_killed(http, bot, fake, post_id, users)

        stored = await stored_answers(db_url, post_id)
        assert burst.acknowledged, "the burst was killed before any acknowledgement"
        assert burst.unacknowledged, "the kill came after the whole burst"
        assert burst.acknowledged - set(stored) == set()  # silently lost: none
        assert max(stored.values()) == 1  # duplicated: none

        # Slack redelivers what it never saw acknowledged; the restarted bot takes them.
        again = BotProcess(db_url, fake.api_url, tmp_path / "bot.log")
        again.port = bot.port
        await again.start()
        statuses = await asyncio.gather(
            *(
                click(http, again.url, fake, post_id, u, users.index(u) % 4, retry_num=1)
                for u in sorted(burst.unacknowledged)
            )
        )
        assert set(statuses) == {200}
        stored = await stored_answers(db_url, post_id)
        assert set(stored) == set(users) and max(stored.values()) == 1
        # A redelivered click that the killed process had recorded gets its own outcome.
        for user in sorted(burst.unacknowledged & set(stored))[:20]:
            await fake.wait_until(lambda u=user: bool(told(fake, u)), timeout=20)
            assert not any("already answered" in t for t in told(fake, user)[-1:])
        assert await again.terminate() == 0


def tracebacks(log: str) -> int:
    """The log records that carry a traceback."""
    chained = ("The above exception was the direct cause", "During handling of the above")
    return log.count("Traceback (most recent call last)") - sum(log.count(c) for c in chained)


@pytest.mark.postgres
async def test_connections_refused_lose_no_click_and_nobody_stays_locked_out(
    db_url: str, tmp_path: Path
) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("a PostgreSQL server that goes away")
    log = tmp_path / "bot.log"
    async with proxied_bot(db_url, log) as pb:
        proxy, fake, http, bot, post_id = pb.proxy, pb.fake, pb.http, pb.bot, pb.post_id
        await proxy.refuse()
        users = [f"U{i:04d}" for i in range(150)]
        statuses = await asyncio.gather(*(click(http, bot.url, fake, post_id, u, 1) for u in users))
        assert set(statuses) == {200}  # every click acknowledged, within Slack's 3 s
        await proxy.accept()

        stored = await stored_answers(db_url, post_id)
        for user in users:
            await fake.wait_until(lambda u=user: bool(told(fake, u)) or u in stored, timeout=20)
        retry = {u for u in users if any(RETRY_TEXT in t for t in told(fake, u))}
        assert set(users) - set(stored) - retry == set()  # silently lost: none
        assert retry, "the outage recorded everything: it was not an outage"

        # Back up: every user told to retry answers at once.
        statuses = await asyncio.gather(
            *(click(http, bot.url, fake, post_id, u, 1) for u in sorted(retry))
        )
        assert set(statuses) == {200}
        stored = await stored_answers(db_url, post_id)
        assert set(stored) == set(users) and max(stored.values()) == 1
        assert await bot.terminate() == 0
    # One record per kind of problem per interval, not a traceback per click (a record's
    # chained causes print a "Traceback" each: they are one record).
    assert tracebacks(log.read_text()) <= 5


@pytest.mark.postgres
async def test_two_replicas_post_one_question_for_an_ask_retried_to_both(
    db_url: str, tmp_path: Path
) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("replicas share a PostgreSQL database")
    async with FakeSlack(team=rq.TEAM) as fake, unlimited_client() as http:
        a = BotProcess(db_url, fake.api_url, tmp_path / "a.log", QUIZBOT_ASK_COOLDOWN="30")
        b = BotProcess(db_url, fake.api_url, tmp_path / "b.log", QUIZBOT_ASK_COOLDOWN="30")
        await asyncio.gather(a.start(), b.start())
        form = rq.slash_command("ask", response_url=fake.response_url("ask"))
        body = rq.form_body(form)
        again = rq.form_body(
            rq.slash_command("ask", user="U0BOB", response_url=fake.response_url("bob"))
        )

        async def post(bot: BotProcess, text: str, retry: int | None = None) -> int:
            headers = rq.signed_headers(text, retry_num=retry)
            async with http.post(bot.url, data=text, headers=headers) as resp:
                return resp.status

        # Slack retries the same command (same trigger_id) to the other replica, and a
        # second member asks on the other replica at the same moment.
        statuses = await asyncio.gather(post(a, body), post(b, body, retry=1), post(b, again))
        assert statuses == [200, 200, 200]
        await fake.wait_until(lambda: bool(fake.calls_to("chat.postMessage")), timeout=30)
        await fake.wait_until(lambda: bool(fake.calls_to("response_url")), timeout=30)
        assert await a.terminate() == 0 and await b.terminate() == 0
    questions = [c for c in fake.calls_to("chat.postMessage") if c.action_ids]
    assert len(questions) == 1
    told = " ".join(c.text for c in fake.calls_to("response_url"))
    assert "works again in" in told
