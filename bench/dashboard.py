"""The dashboard at scale: 1,000,000 answers from 1,000 members in 10 channels, on SQLite
(file, WAL) and PostgreSQL; every page's server time, and the memory clinic's upload of a
100 MiB snapshot.

    .venv/bin/python bench/dashboard.py [--answers 1000000] [--members 1000]
        [--channels 10] [--days 720] [--samples 60] [--upload-mib 100] [--pg URL]

The history is `bench/leaderboard.py`'s generator (every aggregate computed from the
answers by the scoring rules), plus the dashboard's own aggregates (`score_questions`,
`score_day_totals`) computed from the same answers; bulk-loaded, then each page is asked
by a signed-in admin over HTTP on 127.0.0.1, the server's time taken by a middleware
(the handler, from the request's arrival to its answer). The upload comes first, on a
bot with one channel and no history yet (so no heap freed by the generator can hide a
buffered body): sent by another process, streamed, while the bot's RSS is sampled every
20 ms; the clinic's runner checks that the whole file arrived. Sizes the generator
cannot fill (more answers than members x min(3, channels) x days) are refused at once.

Targets: every page p95 <= 150 ms on each database; the bot's RSS grows <= 20 MiB while a
100 MiB snapshot is uploaded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiohttp import web

from adapters.web import WebServer
from adapters.web.dashboard import build_dashboard
from bench import leaderboard as lb
from bench._common import PG_DEFAULT, drop_pg, median, percentile, pg_database, target
from bot.admin import AdminStatus
from bot.app import assemble
from bot.clinic import ClinicJob, ClinicResult, ProgressCallback
from bot.clock import FakeClock
from bot.config import Settings
from bot.domain import ChannelRef, Platform, UserRef
from bot.metrics import MetricsRegistry
from bot.signin import Membership
from questions.loader import load_bank
from storage.engine import create_engine, upgrade
from storage.store import SqlStore

GOAL_MS = 150.0
MiB = 1 << 20
RSS_GOAL_MIB = 20.0
PAGES: tuple[str, ...] = (
    tuple(os.environ.get("BENCH_PAGES", "").split(","))
    if os.environ.get("BENCH_PAGES")
    else (
        "",
        "?channel=C00000",
        "leaderboard",
        "leaderboard?window=week&scope=workspace",
        "leaderboard?window=day",
        "me",
        "demos",
        "clinic",
        "review",
        "channel",
        "questions",
        "schedules",
    )
)


def add_dashboard_tables(history: lb.History) -> None:
    """`score_questions` and `score_day_totals` from the generated answers."""
    t = history.tables
    posts, answers = t["posts"], t["answers"]
    post_channel = np.asarray(posts["channel_id"])
    qids = np.unique(np.array(posts["question_id"]), return_inverse=True)
    names, post_q = qids[0].tolist(), qids[1].astype(np.int64)
    a_post = np.asarray(answers["post_id"]) - 1
    a_channel, a_q = post_channel[a_post], post_q[a_post]
    correct = np.asarray(answers["correct"]).astype(np.int64)
    key = a_channel * len(names) + a_q
    uniq, inv = np.unique(key, return_inverse=True)
    answered = np.bincount(inv)
    right = np.bincount(inv, weights=correct).astype(np.int64)
    pkey = post_channel * len(names) + post_q
    asked = dict(zip(*np.unique(pkey, return_counts=True), strict=True))
    bank = {q.id: q.topic for q in load_bank()}
    t["score_questions"] = {
        "channel_id": uniq // len(names),
        "question_id": [names[k % len(names)] for k in uniq.tolist()],
        "topic": [bank[names[k % len(names)]] for k in uniq.tolist()],
        "asked": np.array([asked[k] for k in uniq.tolist()], dtype=np.int64),
        "answered": answered,
        "correct": right,
    }
    days = t["score_days"]
    day_key = np.asarray(days["channel_id"]) * 100_000 + np.asarray(days["day"]).astype(np.int64)
    dk, di = np.unique(day_key, return_inverse=True)
    t["score_day_totals"] = {
        "channel_id": dk // 100_000,
        "day": (dk % 100_000).astype("datetime64[D]"),
        "answered": np.bincount(di, weights=np.asarray(days["answered"])).astype(np.int64),
        "correct": np.bincount(di, weights=np.asarray(days["correct"])).astype(np.int64),
    }


class InstantClinic:
    """A runner that answers a snapshot at once (the upload's memory is what is measured),
    noting how many bytes of it arrived."""

    enabled = True
    received = 0

    async def submit(self, job: Any) -> None:
        return None

    async def result(self, run_id: int, timeout: float) -> Any:
        return None

    async def run_clinic(
        self, job: ClinicJob, progress: ProgressCallback | None = None
    ) -> ClinicResult:
        if isinstance(job.snapshot, Path):
            InstantClinic.received = job.snapshot.stat().st_size
        return ClinicResult("done", "nothing to report", "", None, None)


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


UPLOADER = r"""
import asyncio, sys, tempfile, aiohttp
async def main(url, cookie, csrf, size):
    with tempfile.NamedTemporaryFile(suffix=".pickle") as f:
        block = b"\x80" * (1 << 20)
        for _ in range(size):
            f.write(block)
        f.flush()
        form = aiohttp.FormData()
        form.add_field("csrf", csrf)
        with open(f.name, "rb") as data:  # a file: the form's length is known, as a browser's
            form.add_field("file", data, filename="big.pickle")
            async with aiohttp.ClientSession(cookies={"quizbot_session": cookie}) as s:
                async with s.post(url, data=form, allow_redirects=False) as r:
                    print(r.status)
asyncio.run(main(*sys.argv[1:4], int(sys.argv[4])))
"""


@contextlib.asynccontextmanager
async def served(
    url: str, timings: list[float], upload_mib: int = 0
) -> AsyncIterator[tuple[str, str, str]]:
    """The bot's dashboard on 127.0.0.1 over the store at `url`, with a signed-in admin
    of T0000: its address, session cookie and CSRF token. `timings` gets each request's
    server time (the handler, from the request's arrival to its answer)."""
    bank = load_bank()
    clock = FakeClock(datetime(2027, 5, 3, 12, tzinfo=UTC))
    settings = Settings(ask_cooldown=0, clinic_max_mb=max(upload_mib + 1, 100))
    async with (
        SqlStore(url, clock=clock) as store,
        assemble(
            store, {}, bank, clock, settings, runner=InstantClinic(), rng=random.Random(1),
            generated=None, wakeups=False,
        ) as quiz,
    ):  # fmt: skip
        server = WebServer(MetricsRegistry(), port=0, host="127.0.0.1")

        async def slack_admin(user: UserRef) -> AdminStatus:
            """The platform says yes (in `serve`: Slack's users.info, kept a minute)."""
            return AdminStatus.YES

        dash = build_dashboard(
            quiz, store, store.web, secret="b" * 40, public_url="http://127.0.0.1:1",
            admins={Platform.SLACK: slack_admin},
        )  # fmt: skip

        @web.middleware
        async def timed(
            request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
        ) -> web.StreamResponse:
            t0 = time.perf_counter()
            try:
                return await handler(request)
            finally:
                timings.append(time.perf_counter() - t0)

        server.app.middlewares.append(timed)
        dash.mount(server.app)
        async with server:
            dash.config = replace(dash.config, public_url=server.url)
            from adapters.web.dashboard.tokens import digest, new_token, sign
            from bot.signin import WebSession

            token, csrf = new_token(), new_token()
            now = clock.now()
            await store.web.create(
                digest(token),
                WebSession(Platform.SLACK, "U000001", "user1", (Membership("T0000", "T", True),),
                           csrf, now, now + timedelta(hours=12)),
            )  # fmt: skip
            yield server.url, sign(b"b" * 40, token), csrf


async def measure(url: str, samples: int) -> dict[str, list[float]]:
    import aiohttp

    from adapters.web.dashboard.site import COOKIE

    out: dict[str, list[float]] = {}
    timings: list[float] = []
    async with (
        served(url, timings) as (base, cookie, _),
        aiohttp.ClientSession(base_url=base, cookies={COOKIE: cookie}) as client,
    ):
        for page in PAGES:
            times = []
            for i in range(samples + 5):
                timings.clear()
                async with client.get(f"/w/slack/T0000/{page}") as resp:
                    await resp.read()
                    assert resp.status == 200, (page, resp.status)
                if i >= 5:
                    times.append(timings[-1])
            out[page or "overview"] = times
    return out


async def measure_upload(tmp: str, mib: int) -> float:
    """The upload, on a bot with one channel and no history yet: the RSS it starts from
    has no freed heap left by the generator to absorb a buffered body unseen."""
    url = f"sqlite+aiosqlite:///{tmp}/upload.db"
    engine = create_engine(url)
    await upgrade(engine)
    await engine.dispose()
    async with SqlStore(url) as store:
        ref = ChannelRef(Platform.SLACK, "T0000", "C00000")
        await store.settings.save(await store.settings.get(ref))
    async with served(url, [], mib) as (base, cookie, csrf):
        return await upload(base, cookie, csrf, mib)


async def upload(url: str, cookie: str, csrf: str, mib: int) -> float:
    import gc

    gc.collect()
    before = rss_mib()
    peak = before
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", UPLOADER, f"{url}/w/slack/T0000/clinic", cookie, csrf, str(mib),
        stdout=subprocess.PIPE,
    )  # fmt: skip
    while proc.returncode is None:
        peak = max(peak, rss_mib())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 0.02)
    answer = (await proc.stdout.read()).decode().strip() if proc.stdout else ""
    received = InstantClinic.received
    print(
        f"  upload of {mib} MiB answered {answer}, {received / MiB:.1f} MiB reached the clinic "
        f"(RSS {before:.0f} -> peak {peak:.0f} MiB)"
    )
    assert received == mib * MiB, "the snapshot did not reach the clinic whole"
    return peak - before


async def run_db(name: str, url: str, history: lb.History, args: argparse.Namespace) -> None:
    engine = create_engine(url)
    await upgrade(engine)
    await engine.dispose()
    if "score_questions" not in lb.LOAD_ORDER:
        lb.LOAD_ORDER = (*lb.LOAD_ORDER, "score_questions", "score_day_totals")
    t0 = time.perf_counter()
    if name == "sqlite":
        lb.load_sqlite(Path(url.split("///", 1)[1]), history)
    else:
        await lb.load_postgres(url, history)
    print(f"{name}: loaded in {time.perf_counter() - t0:.0f} s", flush=True)
    pages = await measure(url, args.samples)
    for page, times in pages.items():
        ms = percentile(times, 95) * 1000
        print(
            f"  {name} {page}: median {median(times) * 1000:.1f} ms, p95 {ms:.1f} ms, "
            f"max {max(times) * 1000:.1f} ms ({len(times)} requests)"
        )
    for page, times in pages.items():
        ms = percentile(times, 95) * 1000
        target(f"{name} page {page} p95", f"{ms:.1f} ms", f"<= {GOAL_MS:.0f} ms", ms <= GOAL_MS)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--answers", type=int, default=1_000_000, help="answers in the history")
    p.add_argument("--members", type=int, default=1000, help="members of the one workspace")
    p.add_argument("--channels", type=int, default=10, help="channels of the workspace")
    # 1,000 members in at most 3 channels each: 720 days hold 1,000,000 distinct answers
    p.add_argument(
        "--days",
        type=int,
        default=720,
        help="days of history, one scheduled question per channel a day; a member answers "
        "at most once a day in each of at most 3 channels, so answers <= members x "
        "min(3, channels) x days",
    )
    p.add_argument("--samples", type=int, default=60, help="requests per page (after 5 warm-ups)")
    p.add_argument("--upload-mib", type=int, default=100, help="the clinic upload (0: none)")
    p.add_argument("--pg", default=os.environ.get("QUIZBOT_BENCH_PG", PG_DEFAULT))
    args = p.parse_args(argv)
    if problem := lb.size_problem(args.answers, args.members, args.channels, 1, args.days):
        p.error(problem)
    if args.samples < 1:
        p.error(f"--samples must be at least 1 (got {args.samples})")
    if args.upload_mib < 0:
        p.error(f"--upload-mib cannot be negative (got {args.upload_mib})")
    return args


async def main(args: argparse.Namespace) -> None:
    growth = None
    if args.upload_mib:
        with tempfile.TemporaryDirectory() as tmp:
            growth = await measure_upload(tmp, args.upload_mib)
    t0 = time.perf_counter()
    history = lb.generate(args.answers, args.members, args.channels, 1, args.days)
    add_dashboard_tables(history)
    print(f"generated {history.counts['answers']:,} answers in {time.perf_counter() - t0:.0f} s")
    with tempfile.TemporaryDirectory() as tmp:
        await run_db("sqlite", f"sqlite+aiosqlite:///{tmp}/bench.db", history, args)
    url = await pg_database(args.pg, "dash", migrate=False)
    if url is None:
        target("postgresql measured", "not reachable", "measured", False)
    else:
        try:
            await run_db("postgresql", url, history, args)
        finally:
            await drop_pg(args.pg, url)
    if growth is not None:
        target(
            f"clinic upload {args.upload_mib} MiB RSS growth",
            f"{growth:.1f} MiB",
            f"<= {RSS_GOAL_MIB:.0f} MiB",
            growth <= RSS_GOAL_MIB,
        )


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
