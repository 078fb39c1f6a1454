"""Acknowledged => durable, with real processes: `quizbot serve` (Slack HTTP mode) killed
with SIGKILL in the middle of a burst of clicks, and PostgreSQL refusing connections while
clicks arrive. After either, every acknowledged click is stored or its user was told to
click again; nothing is stored twice; and everyone can answer once the fault is gone."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.fake_slack import FakeSlack
from tests.faults.harness import (
    RETRY_TEXT,
    BotProcess,
    Burst,
    Session,
    ask,
    click,
    stored_answers,
    told,
    wait_open,
)
from tests.faults.proxy import TcpProxy

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

CLICKS = 600


async def burst_until_killed(
    http: object, bot: BotProcess, fake: FakeSlack, post_id: int, users: list[str]
) -> Burst:
    burst = Burst()
    enough = asyncio.Event()

    async def one(i: int, user: str) -> None:
        burst.status[user] = await click(http, bot.url, fake, post_id, user, i % 4)  # type: ignore[arg-type]
        if len(burst.acknowledged) >= len(users) // 20 and not enough.is_set():
            # Killed right here, early: the client reads answers slower than the bot sends
            # them, so by a third read (or a task woken to kill) the bot had answered all.
            assert bot.proc is not None
            bot.proc.send_signal(signal.SIGKILL)
            enough.set()

    tasks = [asyncio.create_task(one(i, u)) for i, u in enumerate(users)]
    await enough.wait()
    await bot.kill()
    await asyncio.gather(*tasks)
    return burst


async def test_sigkill_mid_burst_loses_no_acknowledged_click(db_url: str, tmp_path: Path) -> None:
    users = [f"U{i:05d}" for i in range(CLICKS)]
    async with FakeSlack(team=rq.TEAM) as fake, Session() as http:
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


@pytest.mark.postgres
async def test_connections_refused_lose_no_click_and_nobody_stays_locked_out(
    db_url: str, tmp_path: Path
) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("a PostgreSQL server that goes away")
    parts = urlsplit(db_url)
    log = tmp_path / "bot.log"
    async with (
        TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5432) as proxy,
        FakeSlack(team=rq.TEAM) as fake,
        Session() as http,
    ):
        proxied = urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{proxy.port}"))
        bot = BotProcess(proxied, fake.api_url, log)
        await bot.start()
        post_id = await ask(http, bot, fake, rq.CHANNEL)
        await wait_open(db_url, post_id)

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
    # One line per kind of problem per interval, not a traceback per click.
    assert log.read_text().count("Traceback") <= 5
