"""Answer-button bursts on Discord, in both of the adapter's modes: 1,000 clicks from 1,000
users on one open question, into the real adapter (and, over the gateway, the real
discord.py connection), on SQLite (file, WAL) and PostgreSQL.

    .venv/bin/python bench/discord_interactions.py [--users 1000] [--repeats 3]
        [--db sqlite|postgresql|both] [--mode http|gateway|both] [--pg URL]

The fake Discord runs in its own process (Discord is not on the bot's CPU):
- HTTP endpoint mode: it signs every click (Ed25519, as Discord does), opens one keep-alive
  connection per click to the bot's ``/discord/interactions`` and sends them all at once;
  each click is timed from its send to the end of the bot's answer — the initial response,
  which carries the outcome (the answer is recorded before it).
- gateway mode: it pushes the clicks as ``INTERACTION_CREATE`` frames as fast as it can
  send them (about 10 ms for all); each click is timed from its frame to the interaction
  callback the bot POSTs (again carrying the outcome: recorded first).
Each burst is on a fresh question (its own channel and users); the median of `repeats`
bursts is reported. Afterwards the answers are counted in the database.

Targets: HTTP endpoint mode, p99 request -> inline response <= 300 ms, all stored;
gateway mode, p99 dispatch -> initial response <= 1 s (Discord's deadline is 3 s), all
stored; every click answered in both.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

with warnings.catch_warnings():  # discord.py imports the deprecated stdlib audioop
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord  # noqa: F401

from aiohttp import web

from adapters.discord.adapter import DiscordAdapter
from bench._common import PG_DEFAULT, bench_quiz, median, on_pg, over_repeats, percentile, target
from bot.app import settled_heap
from bot.clock import SystemClock
from bot.domain import ChannelRef, Platform
from bot.ports import Chat
from storage.engine import create_engine, upgrade
from storage.store import SqlStore
from tests.adapters.served import endpoint_served

GUILD = "811111111111111111"
FIRST_CHANNEL = 822222222222220000
GOALS_MS = {"http": 300.0, "gateway": 1000.0}


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
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


FLOOR_ANSWER = {"type": 4, "data": {"flags": 64, "content": "ok"}}


async def floor(request: web.Request) -> web.Response:
    """An empty handler beside the endpoint: reads the body, answers a constant. On a
    shared, noisy machine the ratio to it says more than the milliseconds."""
    await request.read()
    return web.json_response(FLOOR_ANSWER)


async def bursts(url: str, mode: str, users: int, repeats: int) -> list[dict[str, Any]]:
    """`repeats` bursts in one adapter (a fresh fake Discord for the run)."""
    fake_port = free_port()
    fake = start_fake(fake_port)
    loop = asyncio.get_running_loop()
    chats: dict[str, Chat] = {}
    results = []
    heap = contextlib.ExitStack()
    try:
        async with (
            SqlStore(url) as store,
            bench_quiz(store, chats, SystemClock()) as quiz,
        ):
            service = quiz.service
            options: dict[str, Any] = {}
            if mode == "http":
                key = await loop.run_in_executor(None, control, fake_port, "public_key")
                options["public_key"] = key["public_key"]
            adapter = DiscordAdapter(
                quiz,
                token="bench-token",
                api_base=f"http://127.0.0.1:{fake_port}/api/v10",
                gateway_url=f"ws://127.0.0.1:{fake_port}/gateway",
                dev_guild=int(GUILD),
                guild_ready_timeout=0.05,
                **options,
            )
            chats[Platform.DISCORD] = adapter.chat
            # 1,000 connections at once overflow the default accept backlog (128).
            serving: Any = (
                endpoint_served(adapter, routes={"/floor": floor}, backlog=4096)
                if mode == "http"
                else contextlib.nullcontext(0)
            )
            async with adapter, serving as port:
                await adapter.wait_until_ready(timeout=10)
                # What `quizbot serve` does once started (the start-up's objects leave the
                # collector's generations; full collections stay out of bursts).
                heap.enter_context(settled_heap())
                for rep in range(repeats):
                    channel = str(FIRST_CHANNEL + rep)
                    post = await service.ask(ChannelRef(Platform.DISCORD, GUILD, channel))
                    assert post is not None and post.message is not None
                    spec = {
                        "message_id": post.message.message,
                        "users": users,
                        "channel_id": channel,
                        "first_user": 10**15 + rep * users,
                    }
                    result = await one_burst(loop, fake_port, mode, spec, port)
                    await adapter.idle()
                    result["stored"] = len(await store.answers.for_post(post.id))
                    results.append(result)
                await service.drain_updates()
    finally:
        heap.close()
        fake.terminate()
        fake.wait(timeout=10)
    return results


async def one_burst(
    loop: asyncio.AbstractEventLoop, fake_port: int, mode: str, spec: dict[str, Any], port: int
) -> dict[str, Any]:
    cpu0 = time.process_time()
    floor_p99 = float("nan")
    if mode == "http":
        body = spec | {"port": port}
        empty = body | {"path": "/floor", "first_user": spec["first_user"] + 10**12}
        fired = await loop.run_in_executor(None, control, fake_port, "http_burst", empty)
        floor_p99 = percentile(fired["latencies"], 99) * 1000
        cpu0 = time.process_time()
        fired = await loop.run_in_executor(None, control, fake_port, "http_burst", body)
        latencies = fired["latencies"]
        answered = fired["statuses"].get("200", 0)
        kinds = fired["types"]
    else:
        await loop.run_in_executor(None, control, fake_port, "burst", spec)
        # One request that the fake answers once every click got its callback (within a
        # minute): no polling competes with the burst.
        state = await loop.run_in_executor(
            None, control, fake_port, f"state?callbacks={spec['users']}"
        )
        latencies = state["callback_latencies"]
        answered = len(latencies)
        kinds = state["callback_types"]
    return {
        "answered": answered,
        "p50": median(latencies) * 1000,
        "p99": percentile(latencies, 99) * 1000,
        "max": max(latencies) * 1000 if latencies else float("nan"),
        "types": kinds,
        "bot_cpu": time.process_time() - cpu0,
        "floor_p99": floor_p99,
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--mode", choices=["http", "gateway", "both"], default="both")
    parser.add_argument("--pg", default=os.environ.get("QUIZBOT_TEST_POSTGRES_URL", PG_DEFAULT))
    args = parser.parse_args()
    modes = ["http", "gateway"] if args.mode == "both" else [args.mode]
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for mode in modes:
        if args.db in ("sqlite", "both"):
            with tempfile.TemporaryDirectory() as tmp:
                url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
                engine = create_engine(url)
                await upgrade(engine)
                await engine.dispose()
                runs["sqlite", mode] = await bursts(url, mode, args.users, args.repeats)
        if args.db in ("postgresql", "both"):
            work = partial(bursts, mode=mode, users=args.users, repeats=args.repeats)
            if (pg := await on_pg(args.pg, f"discord_{mode}", work)) is not None:
                runs["postgresql", mode] = pg

    summary = {}
    for (db, mode), reps in runs.items():
        s = summary[db, mode] = over_repeats(
            reps, fewest=("answered", "stored"), middle=("p50", "p99")
        )
        print(
            f"{db} {mode}: {len(reps)} bursts of {args.users} clicks; p99 per burst "
            + ", ".join(f"{r['p99']:.0f}" for r in reps)
            + " ms, p50 "
            + ", ".join(f"{r['p50']:.0f}" for r in reps)
            + " ms, max "
            + ", ".join(f"{r['max']:.0f}" for r in reps)
            + " ms"
            + (
                " (empty handler p99 " + ", ".join(f"{r['floor_p99']:.0f}" for r in reps) + " ms)"
                if mode == "http"
                else ""
            )
            + "; bot CPU per burst "
            + ", ".join(f"{r['bot_cpu']:.2f}" for r in reps)
            + f" s; initial response types {reps[-1]['types']} (4 = the outcome inline, "
            f"5 = deferred); fewest answered {s['answered']}, fewest stored {s['stored']}"
        )
    for (db, mode), s in summary.items():
        label = "request_to_inline_response" if mode == "http" else "dispatch_to_initial_response"
        target(
            f"discord_{mode}_{db}_all_answered",
            f"{s['answered']}/{args.users} (fewest of {args.repeats})",
            "all",
            s["answered"] == args.users,
        )
        goal = GOALS_MS[mode]
        target(
            f"discord_{mode}_{db}_p99_{label}",
            f"{s['p99']:.0f} ms (median of {args.repeats})",
            f"<= {goal:.0f} ms",
            s["p99"] <= goal,
        )
        target(
            f"discord_{mode}_{db}_answers_stored",
            f"{s['stored']}/{args.users} (fewest of {args.repeats})",
            "all",
            s["stored"] == args.users,
        )


if __name__ == "__main__":
    asyncio.run(main())
