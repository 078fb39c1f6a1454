"""Answer burst: 5,000 different users answer one open post at once, through the core's
record-answer use case, on SQLite (file, WAL) and PostgreSQL; beside it, the raw driver's
rate for the same rows (one transaction per row, and batched).

    .venv/bin/python bench/answers.py [--users 5000] [--pg URL]

The burst runs under the garbage collector's setting `quizbot serve` runs with
(`bot.app.settled_heap`: the start-up heap frozen, full collections kept out of bursts), as
the Slack and Discord benches do. Each database's burst is also run once with CPython's
default collector, for information: every feature's module adds to the heap that its full
collections scan, so that figure falls as the bot grows.

Targets: all answers recorded, p99 <= 1 s, throughput >= 5,000 answers/s on both databases.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import PG_DEFAULT, bench_quiz, median, on_pg, percentile, target
from bot.app import settled_heap
from bot.clock import SystemClock
from bot.domain import AnswerStatus, ChannelRef, MessageRef, Platform, UserRef
from bot.messages import Image, Message
from questions.loader import load_bank
from storage.engine import create_engine, upgrade
from storage.store import SqlStore


class NullChat:
    """The platform is not what is measured here."""

    async def post_message(self, channel: ChannelRef, message: Message) -> MessageRef:
        return MessageRef(channel, "m1")

    async def reply_in_thread(self, parent: MessageRef, message: Message) -> MessageRef:
        return MessageRef(parent.channel, "t1")

    async def send_private(self, channel: ChannelRef, user: UserRef, message: Message) -> None:
        return None

    async def update_message(self, ref: MessageRef, message: Message) -> None:
        return None

    async def upload_image(self, parent: MessageRef, image: Image, comment: str = "") -> None:
        return None


async def burst(url: str, users: int, *, settled: bool = True) -> dict[str, float]:
    bank = load_bank()
    async with (
        SqlStore(url) as store,
        bench_quiz(store, {Platform.SLACK: NullChat()}, SystemClock(), bank=bank) as quiz,
    ):
        service = quiz.service
        channel = ChannelRef(Platform.SLACK, "T1", f"C{random.randrange(10**9)}")
        post = await service.ask(channel)
        assert post is not None
        latencies: list[float] = []

        async def answer(i: int) -> AnswerStatus:
            who = UserRef(Platform.SLACK, "T1", f"U{channel.channel}{i}", f"user{i}")
            t0 = time.perf_counter()
            reply = await service.record_answer(post.id, who, i % 4)
            latencies.append(time.perf_counter() - t0)
            return reply.outcome.status

        with settled_heap() if settled else contextlib.nullcontext():
            t0 = time.perf_counter()
            statuses = await asyncio.gather(*(answer(i) for i in range(users)))
            elapsed = time.perf_counter() - t0
        await service.drain_updates()
        stored = sum(await store.answers.distribution(post.id, 4))
    return {
        "recorded": sum(s is AnswerStatus.RECORDED for s in statuses),
        "stored": stored,
        "rate": users / elapsed,
        "p50": median(latencies),
        "p99": percentile(latencies, 99),
    }


async def raw_sqlite(path: Path, rows: int) -> tuple[float, float]:
    import aiosqlite

    async with aiosqlite.connect(path, isolation_level=None) as db:
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute("PRAGMA synchronous=NORMAL")
        await db.execute(
            "CREATE TABLE IF NOT EXISTS raw (post INT, member TEXT, choice INT, "
            "at TEXT, UNIQUE(post, member))"
        )
        now = datetime.now(UTC).isoformat()
        t0 = time.perf_counter()
        for i in range(rows):
            await db.execute("BEGIN IMMEDIATE")
            await db.execute(
                "INSERT INTO raw VALUES (1, ?, ?, ?) ON CONFLICT DO NOTHING", (f"u{i}", i % 4, now)
            )
            await db.execute("COMMIT")
        single = rows / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        for start in range(0, rows, 500):
            await db.execute("BEGIN IMMEDIATE")
            await db.executemany(
                "INSERT INTO raw VALUES (2, ?, ?, ?) ON CONFLICT DO NOTHING",
                [(f"u{i}", i % 4, now) for i in range(start, start + 500)],
            )
            await db.execute("COMMIT")
        batched = rows / (time.perf_counter() - t0)
    return single, batched


async def raw_postgres(url: str, rows: int) -> tuple[float, float]:
    import asyncpg

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await conn.execute(
            "CREATE TEMP TABLE raw (post INT, member TEXT, choice INT, "
            "at TIMESTAMPTZ, UNIQUE(post, member))"
        )
        now = datetime.now(UTC)
        t0 = time.perf_counter()
        for i in range(rows):
            async with conn.transaction():
                await conn.execute(
                    "INSERT INTO raw VALUES (1, $1, $2, $3) ON CONFLICT DO NOTHING",
                    f"u{i}",
                    i % 4,
                    now,
                )
        single = rows / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        for start in range(0, rows, 500):
            async with conn.transaction():
                await conn.executemany(
                    "INSERT INTO raw VALUES (2, $1, $2, $3) ON CONFLICT DO NOTHING",
                    [(f"u{i}", i % 4, now) for i in range(start, start + 500)],
                )
        batched = rows / (time.perf_counter() - t0)
    finally:
        await conn.close()
    return single, batched


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=5000)
    parser.add_argument("--pg", default=os.environ.get("QUIZBOT_TEST_POSTGRES_URL", PG_DEFAULT))
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        url = f"sqlite+aiosqlite:///{db}"
        engine = create_engine(url)
        await upgrade(engine)
        await engine.dispose()
        results["sqlite"] = await burst(url, args.users)
        results["sqlite"]["default_gc"] = (await burst(url, args.users, settled=False))["rate"]
        single, batched = await raw_sqlite(Path(tmp) / "raw.db", args.users)
        results["sqlite"].update(raw_single=single, raw_batched=batched)

    async def on_postgres(url: str) -> dict[str, float]:
        r = await burst(url, args.users)
        r["default_gc"] = (await burst(url, args.users, settled=False))["rate"]
        single, batched = await raw_postgres(url, args.users)
        r.update(raw_single=single, raw_batched=batched)
        return r

    if (pg := await on_pg(args.pg, "answers", on_postgres)) is not None:
        results["postgresql"] = pg

    for db_name, r in results.items():
        print(
            f"{db_name}: {args.users} users -> recorded {int(r['recorded'])}, stored "
            f"{int(r['stored'])}; {r['rate']:.0f} answers/s; p50 {r['p50'] * 1000:.0f} ms, "
            f"p99 {r['p99'] * 1000:.0f} ms ({r['default_gc']:.0f} answers/s with CPython's "
            f"default collector); raw driver: {r['raw_single']:.0f} rows/s one "
            f"transaction per row, {r['raw_batched']:.0f} rows/s in batches of 500"
        )
    for db_name, r in results.items():
        target(
            f"answers_{db_name}_all_recorded",
            f"{int(r['stored'])}/{args.users}",
            f"{args.users}/{args.users}",
            r["stored"] == args.users == r["recorded"],
        )
        target(f"answers_{db_name}_p99", f"{r['p99'] * 1000:.0f} ms", "<= 1000 ms", r["p99"] <= 1.0)
        target(
            f"answers_{db_name}_throughput", f"{r['rate']:.0f}/s", ">= 5000/s", r["rate"] >= 5000
        )
    if "postgresql" not in results:
        target("answers_postgresql_measured", "not reachable", "measured", False)


if __name__ == "__main__":
    asyncio.run(main())
