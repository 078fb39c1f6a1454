"""Real processes for fault tests and `bench/faults.py`: `quizbot serve` in Slack HTTP mode
as a subprocess (killed with SIGKILL, restarted), a fake Slack on 127.0.0.1, and a burst
of signed clicks whose every acknowledgement is recorded.

A click's fate is read from both ends: the HTTP status Slack would see (200 =
acknowledged), the private replies the fake Slack received (told the outcome, or told to
retry), and the answers in the database (stored, duplicated).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import sys
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import aiohttp
from sqlalchemy import text

from storage.engine import create_engine
from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.fake_slack import BOT_TOKEN, FakeSlack
from tests.faults.proxy import TcpProxy
from tests.polling import eventually

ROOT = Path(__file__).resolve().parents[2]
RETRY_TEXT = "could not be recorded"
_POST = re.compile(r"quiz:answer:(\d+):")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class BotProcess:
    """`python -m bot.cli serve` with Slack in HTTP mode, on its own port and database."""

    def __init__(self, db_url: str, api_url: str, log: Path, **env: str) -> None:
        self.db_url = db_url
        self.api_url = api_url
        self.port = free_port()
        self.log = log
        self.extra = env
        self.proc: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    def _env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("QUIZBOT_", "SLACK_", "DISCORD_"))
        }
        env.update(
            QUIZBOT_DATABASE_URL=self.db_url,
            QUIZBOT_HTTP_PORT=str(self.port),
            QUIZBOT_RUNNER="off",
            QUIZBOT_ASK_COOLDOWN="0",
            SLACK_BOT_TOKEN=BOT_TOKEN,
            SLACK_SIGNING_SECRET=rq.SIGNING_SECRET,
            SLACK_API_URL=self.api_url,
            PYTHONUNBUFFERED="1",
        )
        env.update(self.extra)
        return env

    async def start(self, timeout: float = 60.0) -> None:
        with self.log.open("ab") as out:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bot.cli",
                "serve",
                cwd=ROOT,
                env=self._env(),
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
            )
        async with aiohttp.ClientSession() as http:

            async def listening() -> bool:
                assert self.proc is not None
                if self.proc.returncode is not None:
                    raise RuntimeError(f"serve exited with {self.proc.returncode}: {self.log}")
                try:
                    async with http.get(f"http://127.0.0.1:{self.port}/healthz") as resp:
                        return resp.status in (200, 503)
                except aiohttp.ClientConnectionError:
                    return False

            await eventually(listening, timeout=timeout, interval=0.1, what="serve to listen")

    async def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)
            await self.proc.wait()

    async def terminate(self, timeout: float = 30.0) -> int:
        assert self.proc is not None
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.proc.wait(), timeout)


@dataclass
class Burst:
    """What happened to each user's click."""

    status: dict[str, int | None] = field(default_factory=dict)  # HTTP status or None

    @property
    def acknowledged(self) -> set[str]:
        return {u for u, s in self.status.items() if s == 200}

    @property
    def unacknowledged(self) -> set[str]:
        return set(self.status) - self.acknowledged


async def click(
    http: aiohttp.ClientSession,
    url: str,
    fake: FakeSlack,
    post_id: int,
    user: str,
    choice: int,
    *,
    retry_num: int | None = None,
    channel: str = rq.CHANNEL,
) -> int | None:
    payload = rq.block_actions(
        post_id, choice, user=user, channel=channel, response_url=fake.response_url(f"c-{user}")
    )
    body = rq.interaction_body(payload)
    try:
        async with http.post(
            url, data=body, headers=rq.signed_headers(body, retry_num=retry_num)
        ) as r:
            await r.read()
            return r.status
    except (TimeoutError, aiohttp.ClientError):
        return None


async def ask(http: aiohttp.ClientSession, bot: BotProcess, fake: FakeSlack, channel: str) -> int:
    """`/quiz ask` in `channel`; the id of the post it made."""
    before = len(fake.calls_to("chat.postMessage"))
    body = rq.form_body(
        rq.slash_command("ask", channel=channel, response_url=fake.response_url("ask"))
    )
    async with http.post(bot.url, data=body, headers=rq.signed_headers(body)) as resp:
        assert resp.status == 200, await resp.text()
    await fake.wait_until(lambda: len(fake.calls_to("chat.postMessage")) > before, timeout=30)
    posted = fake.calls_to("chat.postMessage")[before]
    m = _POST.search(" ".join(posted.action_ids))
    assert m is not None, posted.args
    return int(m[1])


async def wait_open(db_url: str, post_id: int, timeout: float = 30.0) -> None:
    """Until the post is open in the database (its platform message stored)."""
    engine = create_engine(db_url)

    async def state() -> str | None:
        async with engine.connect() as conn:
            query = text("SELECT state FROM posts WHERE id = :p")
            return (await conn.execute(query, {"p": post_id})).scalar_one_or_none()

    async def is_open() -> bool:
        return await state() == "open"

    try:
        await eventually(is_open, timeout=timeout, interval=0.05, what=f"post {post_id} open")
    finally:
        await engine.dispose()


def told(fake: FakeSlack, user: str) -> list[str]:
    return [
        c.text
        for c in fake.calls_to("response_url")
        if c.args["name"] == f"c-{user}" and c.args.get("response_type") == "ephemeral"
    ]


async def stored_answers(db_url: str, post_id: int) -> Counter[str]:
    """User id -> answers stored for `post_id` (a count above 1 would be a duplicate)."""
    engine = create_engine(db_url)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(
                text(
                    "SELECT m.user_id FROM answers a JOIN members m ON m.id = a.member_id "
                    "WHERE a.post_id = :p"
                ),
                {"p": post_id},
            )
            return Counter(r[0] for r in rows)
    finally:
        await engine.dispose()


@dataclass
class ProxiedBot:
    """A bot whose database connections go through a proxy that can be cut."""

    proxy: TcpProxy
    fake: FakeSlack
    http: aiohttp.ClientSession
    bot: BotProcess
    post_id: int


@contextlib.asynccontextmanager
async def proxied_bot(db_url: str, log: Path) -> AsyncIterator[ProxiedBot]:
    """`quizbot serve` on PostgreSQL through a `TcpProxy`, with one open question."""
    parts = urlsplit(db_url)
    async with (
        TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5432) as proxy,
        FakeSlack(team=rq.TEAM) as fake,
        unlimited_client() as http,
    ):
        proxied = urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{proxy.port}"))
        bot = BotProcess(proxied, fake.api_url, log)
        await bot.start()
        post_id = await ask(http, bot, fake, rq.CHANNEL)
        await wait_open(db_url, post_id)
        yield ProxiedBot(proxy, fake, http, bot, post_id)


async def burst_until_killed(
    http: aiohttp.ClientSession, bot: BotProcess, fake: FakeSlack, post_id: int, users: list[str]
) -> Burst:
    """Every user clicks at once; SIGKILL the bot from the click that sees a twentieth of
    them acknowledged (the client reads answers slower than the bot sends them: by a third
    read, or a task woken to kill, the bot had answered them all)."""
    burst = Burst()
    enough = asyncio.Event()

    async def one(i: int, user: str) -> None:
        burst.status[user] = await click(http, bot.url, fake, post_id, user, i % 4)
        if len(burst.acknowledged) >= len(users) // 20 and not enough.is_set():
            assert bot.proc is not None
            bot.proc.send_signal(signal.SIGKILL)
            enough.set()

    tasks = [asyncio.create_task(one(i, u)) for i, u in enumerate(users)]
    await enough.wait()
    await bot.kill()
    await asyncio.gather(*tasks)
    return burst


def unlimited_client(timeout: float = 30.0) -> aiohttp.ClientSession:
    """An aiohttp client without a connection limit (a burst is concurrent); closed when
    its `async with` ends."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0),
        timeout=aiohttp.ClientTimeout(total=timeout),
    )


__all__ = [
    "RETRY_TEXT",
    "BotProcess",
    "Burst",
    "ProxiedBot",
    "ask",
    "burst_until_killed",
    "click",
    "free_port",
    "proxied_bot",
    "stored_answers",
    "told",
    "unlimited_client",
    "wait_open",
]
