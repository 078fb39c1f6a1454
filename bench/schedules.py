"""Schedules at scale: 10,000 channels with a daily schedule each, 1,000 of them at the
same minute, on SQLite (file, WAL) and PostgreSQL.

    .venv/bin/python bench/schedules.py [--channels 10000] [--hot 1000] [--pg URL]

Each database runs in its own child process (a clean RSS):

- start-up: `Scheduler.initialize()` -- load every schedule, catch up, register one
  APScheduler job per schedule -- on a process that already has the store open;
- RSS of that process once the scheduler is running (bot core, storage, APScheduler,
  aiohttp web server, 10,000 schedules);
- the 1,000 schedules that share 09:00 UTC fire through the real APScheduler trigger (the
  bot's clock is offset so 09:00 is three seconds away): the claim lag is the claim time
  (`posts.created_at`) minus the slot, for every post. The fake platform takes 50 ms per
  post and paces itself at 100 posts/s, like a rate-limited API.

Targets: start-up <= 2 s; RSS <= 150 MB; every post claimed within 5 s of its slot.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import PG_DEFAULT, bench_quiz, drop_pg, median, percentile, pg_database, target

HOT_SLOT = datetime(2027, 6, 1, 9, 0, tzinfo=UTC)
LEAD = timedelta(seconds=3)  # start the scheduler this long before the hot slot
OTHER_ZONES = ("UTC", "Europe/Athens", "Europe/Berlin", "America/New_York", "Asia/Tokyo")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def seed(url: str, channels: int, hot: int, created_at: datetime) -> None:
    """Channels and schedules in bulk (the table as a year of `/quiz schedule set` left it)."""
    from sqlalchemy import insert

    from storage.engine import create_engine
    from storage.models import ChannelRow, ScheduleRow

    rng = random.Random(5)
    engine = create_engine(url)
    async with engine.begin() as conn:
        await conn.execute(
            insert(ChannelRow),
            [
                {
                    "platform": "slack",
                    "workspace": "T1",
                    "channel": f"C{i:05d}",
                    "locale": "en",
                    "timezone": "UTC",
                    "demo_policy": "auto",
                    "created_at": created_at,
                }
                for i in range(channels)
            ],
        )
        rows = []
        for i in range(channels):
            if i < hot:
                zone, local = "UTC", "09:00"
            else:  # whole-hour zones, minutes 1-59: never 09:00 UTC
                zone = OTHER_ZONES[i % len(OTHER_ZONES)]
                local = f"{rng.randrange(24):02d}:{rng.randrange(1, 60):02d}"
            rows.append(
                {
                    "channel_id": i + 1,
                    "timezone": zone,
                    "local_time": local,
                    "weekdays": "daily" if i % 3 else "mon-fri",
                    "cron": None,
                    "window_seconds": None,
                    "demo_policy": "auto",
                    "enabled": True,
                    "created_at": created_at,
                    "created_by": "bench",
                }
            )
        await conn.execute(insert(ScheduleRow), rows)
    await engine.dispose()


class PacedChat:
    """A platform that answers in 50 ms and accepts at most 100 posts a second."""

    def __init__(self, expect: int, latency: float = 0.05, per_second: float = 100.0) -> None:
        self.expect = expect
        self.all_posted = asyncio.Event()
        self.latency = latency
        self.interval = 1 / per_second
        self._next = 0.0
        self.posted = 0
        self.last_post_at = 0.0

    async def _pace(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        slot = max(now, self._next)
        self._next = slot + self.interval
        await asyncio.sleep(slot - now + self.latency)

    async def post_message(self, channel, message):  # type: ignore[no-untyped-def]
        from bot.domain import MessageRef

        await self._pace()
        self.posted += 1
        self.last_post_at = time.time()
        if self.posted >= self.expect:
            self.all_posted.set()
        return MessageRef(channel, f"m{self.posted}")

    async def reply_in_thread(self, parent, message):  # type: ignore[no-untyped-def]
        from bot.domain import MessageRef

        await self._pace()
        return MessageRef(parent.channel, "t")

    async def send_private(self, channel, user, message) -> None:  # type: ignore[no-untyped-def]
        return None

    async def update_message(self, ref, message) -> None:  # type: ignore[no-untyped-def]
        await self._pace()

    async def upload_image(self, parent, image, comment: str = "") -> None:  # type: ignore[no-untyped-def]
        return None


async def run_one(url: str, channels: int, hot: int) -> dict[str, float]:
    """One database, in this process: seed, start, wait for the hot minute."""
    from sqlalchemy import func, select

    from adapters.web import WebServer
    from bot.clock import OffsetClock, SystemClock
    from bot.domain import Platform
    from bot.metrics import MetricsRegistry, QuizMetrics
    from bot.scheduling import Scheduler
    from questions.loader import load_bank
    from storage.engine import create_engine, upgrade
    from storage.models import PostRow
    from storage.store import SqlStore

    engine = create_engine(url)
    await upgrade(engine)
    await engine.dispose()
    clock = OffsetClock(SystemClock())
    clock.advance(HOT_SLOT - LEAD - clock.now())
    await seed(url, channels, hot, clock.now() - timedelta(seconds=5))

    bank = load_bank()
    registry = MetricsRegistry()
    metrics = QuizMetrics(registry)
    chat = PacedChat(expect=hot)
    async with (
        SqlStore(url, clock=clock) as store,
        bench_quiz(store, {Platform.SLACK: chat}, clock, bank=bank, metrics=metrics) as quiz,
    ):
        service = quiz.service
        rss_before = rss_mb()
        # What `scheduling.feature` runs, built here to time its start on its own.
        scheduler = Scheduler(service, store.schedules)
        t0 = time.perf_counter()
        await scheduler.initialize()
        startup = time.perf_counter() - t0
        jobs = len(scheduler.jobs())
        checks = {"scheduler": scheduler.healthy, "database": store.ping}
        async with WebServer(registry, host="127.0.0.1", port=0, checks=checks):
            rss = rss_mb()
            # Wait (real time) for the hot minute and its 1,000 claims.
            deadline = time.monotonic() + 60
            claimed = 0
            while time.monotonic() < deadline:
                async with store.sessions() as s:
                    claimed = (
                        await s.execute(select(func.count()).where(PostRow.slot_at == HOT_SLOT))
                    ).scalar_one()
                if claimed >= hot:
                    break
                await asyncio.sleep(0.1)
            async with store.sessions() as s:
                lags = [
                    (created - slot).total_seconds()
                    for created, slot in (
                        await s.execute(
                            select(PostRow.created_at, PostRow.slot_at).where(
                                PostRow.slot_at == HOT_SLOT
                            )
                        )
                    ).all()
                    if slot is not None  # the query's slot: never None
                ]
            # Posting is paced by the platform; wait for it to finish for the record.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(chat.all_posted.wait(), timeout=60)
            posted_after = chat.last_post_at - (HOT_SLOT - clock.offset).timestamp()
        await scheduler.shutdown()
        await service.drain_updates()
    return {
        "startup": startup,
        "jobs": jobs,
        "rss": rss,
        "rss_before": rss_before,
        "claimed": len(lags),
        "lag_p50": median(lags),
        "lag_p99": percentile(lags, 99),
        "lag_max": max(lags, default=float("nan")),
        "posted": chat.posted,
        "posted_after": posted_after,
    }


def child(url: str, channels: int, hot: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", url, "--channels", str(channels), "--hot", str(hot)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        print(out.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"bench child failed for {url}")
    figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--channels", type=int, default=10_000)
    parser.add_argument("--hot", type=int, default=1_000)
    parser.add_argument("--pg", default=os.environ.get("QUIZBOT_TEST_POSTGRES_URL", PG_DEFAULT))
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(run_one(args.child, args.channels, args.hot))))
        return

    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["sqlite"] = child(f"sqlite+aiosqlite:///{tmp}/bench.db", args.channels, args.hot)
    pg = asyncio.run(pg_database(args.pg, "sched", migrate=False))
    if pg is not None:
        try:
            results["postgresql"] = child(pg, args.channels, args.hot)
        finally:
            asyncio.run(drop_pg(args.pg, pg))

    for name, r in results.items():
        print(
            f"{name}: {args.channels} schedules ({int(r['jobs'])} APScheduler jobs) started in "
            f"{r['startup']:.2f} s; RSS {r['rss']:.0f} MB ({r['rss'] - r['rss_before']:+.0f} MB "
            f"for the scheduler); {int(r['claimed'])}/{args.hot} posts of the shared minute "
            f"claimed, lag p50 {r['lag_p50']:.2f} s, p99 {r['lag_p99']:.2f} s, max "
            f"{r['lag_max']:.2f} s; {int(r['posted'])} posted by {r['posted_after']:.1f} s "
            "after the slot (paced at 100/s)"
        )
    for name, r in results.items():
        target(f"schedules_{name}_startup", f"{r['startup']:.2f} s", "<= 2 s", r["startup"] <= 2)
        target(f"schedules_{name}_rss", f"{r['rss']:.0f} MB", "<= 150 MB", r["rss"] <= 150)
        ok = r["claimed"] == args.hot and r["lag_max"] <= 5
        target(
            f"schedules_{name}_claim_lag",
            f"{int(r['claimed'])}/{args.hot} claimed, max {r['lag_max']:.2f} s",
            f"{args.hot}/{args.hot} within 5 s",
            ok,
        )
    if "postgresql" not in results:
        target("schedules_postgresql_measured", "not reachable", "measured", False)


if __name__ == "__main__":
    main()
