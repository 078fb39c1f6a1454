"""Answer-button burst on Discord: 1,000 INTERACTION_CREATE events from 1,000 users, pushed
through a fake gateway as fast as it can send them, into the real discord.py client and the
Discord adapter, on SQLite (file, WAL) and PostgreSQL.

The fake Discord runs in its own process (Discord is not on the bot's CPU) and measures,
per interaction, from sending the gateway frame to receiving the interaction callback.

    .venv/bin/python bench/discord_interactions.py [--users 1000] [--pg URL] [--ack-deadline S]

Targets: every interaction gets its initial response; p99 dispatch -> callback <= 300 ms
(Discord's limit is 3 s); all answers stored.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

with warnings.catch_warnings():  # discord.py imports the deprecated stdlib audioop
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord  # noqa: F401

from adapters.discord.client import DiscordAdapter
from bench._common import PG_DEFAULT, drop_pg, median, percentile, pg_database, target
from bot.clock import SystemClock
from bot.commands import core_commands
from bot.domain import ChannelRef, Platform
from bot.ports import Chat
from bot.quiz import QuizService
from questions.loader import load_bank
from storage.engine import create_engine, upgrade
from storage.store import SqlStore

GUILD = "811111111111111111"
CHANNEL = "822222222222222222"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_fake(port: int) -> subprocess.Popen[bytes]:
    code = (
        "import asyncio; from tests.adapters.discord.fake_control import serve_forever; "
        f"asyncio.run(serve_forever({port}))"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.readline()  # "fake discord on …": listening
    return proc


def control(port: int, path: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}/_fake/{path}", data=data)
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=90) as resp:
        return json.loads(resp.read())


async def burst(
    url: str, port: int, users: int, ack_deadline: float, gc_freeze: bool = False
) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    chats: dict[str, Chat] = {}
    async with SqlStore(url) as store:
        service = QuizService(
            store,
            chats,
            load_bank(),
            SystemClock(),
            rng=random.Random(1),
            count_update_interval=1.0,
        )
        adapter = DiscordAdapter(
            service,
            core_commands(),
            token="bench-token",
            api_base=f"http://127.0.0.1:{port}/api/v10",
            gateway_url=f"ws://127.0.0.1:{port}/gateway",
            dev_guild=int(GUILD),
            guild_ready_timeout=0.05,
            ack_deadline=ack_deadline,
        )
        chats[Platform.DISCORD] = adapter.chat
        async with adapter:
            await adapter.wait_until_ready(timeout=10)
            if gc_freeze:
                # What `quizbot serve` should do once started (see docs/discord.md): the
                # objects of the startup (question bank, ORM, discord.py) leave the
                # collector's generations, so a burst's collections scan only its own.
                gc.freeze()
            post = await service.ask(ChannelRef(Platform.DISCORD, GUILD, CHANNEL))
            assert post is not None and post.message is not None
            fake_cpu0 = (await loop.run_in_executor(None, control, port, "state"))["cpu_seconds"]
            t0 = time.perf_counter()
            cpu0 = time.process_time()
            await loop.run_in_executor(
                None, control, port, "burst", {"message_id": post.message.message, "users": users}
            )
            deadline = time.monotonic() + 60
            # One request that the fake answers once every click got its callback (within a
            # minute): no polling competes with the burst.
            state = await loop.run_in_executor(None, control, port, f"state?callbacks={users}")
            elapsed = time.perf_counter() - t0
            cpu = time.process_time() - cpu0
            # The answers are recorded, and each outcome replaces its "thinking…" line, after
            # the acknowledgements: wait for both (against the same deadline).
            stored = edits = 0
            while time.monotonic() < deadline:
                stored = sum(await store.answers.distribution(post.id, 4))
                after = await loop.run_in_executor(None, control, port, "state")
                edits = after["edits_of_original"]
                if stored >= users and edits >= users:
                    break
                await asyncio.sleep(0.1)
            settled = time.perf_counter() - t0
            cpu_all = time.process_time() - cpu0
            await service.drain_updates()
    latencies = state.get("callback_latencies", [])
    return {
        "responded": len(latencies),
        "stored": stored,
        "edits": edits,
        "settled": settled,
        "bot_cpu_all": cpu_all,
        "p50": median(latencies),
        "p99": percentile(latencies, 99),
        "max": max(latencies) if latencies else float("nan"),
        "types": state.get("callback_types", {}),
        "rest_calls": state.get("rest_calls", 0),
        "failed": state.get("failed", []),
        "elapsed": elapsed,
        "bot_cpu": cpu,
        "fake_cpu": state.get("cpu_seconds", 0.0) - fake_cpu0,
        "dispatch_span": state.get("dispatch_span", 0.0),
        "callback_span": state.get("callback_span", 0.0),
    }


async def run_one(
    name: str, url: str, users: int, ack_deadline: float, gc_freeze: bool
) -> dict[str, Any]:
    port = free_port()
    fake = start_fake(port)  # a fresh fake per database: its records are per run
    try:
        return await burst(url, port, users, ack_deadline, gc_freeze)
    finally:
        gc.unfreeze()
        fake.terminate()
        fake.wait(timeout=10)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--pg", default=os.environ.get("QUIZBOT_TEST_POSTGRES_URL", PG_DEFAULT))
    parser.add_argument("--ack-deadline", type=float, default=1.0, help="defer after (s)")
    parser.add_argument(
        "--no-gc-freeze",
        dest="gc_freeze",
        action="store_false",
        help="skip the gc.freeze() that `quizbot serve` does once started (to compare)",
    )
    args = parser.parse_args()
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        engine = create_engine(url)
        await upgrade(engine)
        await engine.dispose()
        results["sqlite"] = await run_one(
            "sqlite", url, args.users, args.ack_deadline, args.gc_freeze
        )
    pg = await pg_database(args.pg, "discord")
    if pg is not None:
        try:
            results["postgresql"] = await run_one(
                "postgresql", pg, args.users, args.ack_deadline, args.gc_freeze
            )
        finally:
            await drop_pg(args.pg, pg)

    for db, r in results.items():
        print(
            f"{db}: {r['responded']}/{args.users} initial responses in {r['elapsed']:.2f} s, "
            f"dispatch->callback p50 {r['p50'] * 1000:.0f} ms, p99 {r['p99'] * 1000:.0f} ms, "
            f"max {r['max'] * 1000:.0f} ms; callback types {r['types']} "
            f"(4 = answered at once, 5 = deferred); {r['rest_calls']} REST calls; "
            f"{r['stored']} answers stored and {r['edits']} outcomes shown after "
            f"{r['settled']:.2f} s; CPU bot {r['bot_cpu']:.2f} s to the last callback "
            f"({r['bot_cpu_all']:.2f} s to the last outcome), "
            f"fake Discord {r['fake_cpu']:.2f} s; frames sent over {r['dispatch_span']:.3f} s, "
            f"callbacks over {r['callback_span']:.3f} s"
        )
        if r["failed"]:
            print(f"{db}: failed calls: {r['failed'][:5]} ({len(r['failed'])} in all)")
    for db, r in results.items():
        target(
            f"discord_initial_responses_{db}",
            f"{r['responded']}/{args.users}",
            f"{args.users}/{args.users}",
            r["responded"] == args.users,
        )
        target(
            f"discord_callback_p99_{db}",
            f"{r['p99'] * 1000:.0f} ms",
            "<= 300 ms",
            r["p99"] <= 0.3,
        )
        target(
            f"discord_answers_stored_{db}",
            f"{r['stored']}/{args.users}",
            f"{args.users}/{args.users}",
            r["stored"] == args.users,
        )


if __name__ == "__main__":
    asyncio.run(main())
