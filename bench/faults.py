"""What production does to the answer path, with real processes: `quizbot serve` (Slack
HTTP mode) on SQLite and PostgreSQL, a fake Slack, signed clicks from a client.

    .venv/bin/python bench/faults.py [--db sqlite|postgresql|both] [--scale 1.0]

Scenarios (sizes as in the issue that asked for this; `--scale` shrinks them):
- kill9: 2,000 clicks on one question; SIGKILL once a third are acknowledged; restart;
  Slack redelivers the clicks it never saw acknowledged.
- replicas: two bot processes on one database, 4 questions in 4 channels, 4,200 clicks,
  the two replicas taking each user's clicks in opposite post orders.
- db_outage (PostgreSQL): ~100 clicks/s for 14 s, the database refusing connections for
  10 s of them (a TCP proxy in front of it); then the users told to retry click again.

Per scenario and database: acknowledged / stored / told to retry / silently lost /
duplicated, and the targets: silently lost 0, duplicated 0, deadlock (or other) errors
reaching a user 0, users still failing after recovery 0.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import PG_DEFAULT, drop_pg, pg_database, target
from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.fake_slack import FakeSlack
from tests.faults.harness import (
    RETRY_TEXT,
    BotProcess,
    Burst,
    ask,
    burst_until_killed,
    click,
    proxied_bot,
    stored_answers,
    told,
    unlimited_client,
    wait_open,
)

WENT_WRONG = "went wrong"


@dataclass
class Row:
    scenario: str
    db: str
    clicks: int
    acknowledged: int
    stored: int
    told_retry: int
    lost: int
    duplicated: int
    errors_to_users: int = 0
    failing_after_recovery: int = 0
    note: str = ""


async def _settle(fake: FakeSlack, users: list[str], stored: set[str], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if all(told(fake, u) or u in stored for u in users):
            return
        await asyncio.sleep(0.2)


async def kill9(db_url: str, db: str, work: Path, n: int) -> Row:
    users = [f"U{i:05d}" for i in range(n)]
    async with FakeSlack(team=rq.TEAM) as fake, unlimited_client() as http:
        bot = BotProcess(db_url, fake.api_url, work / f"kill9-{db}.log")
        await bot.start()
        post_id = await ask(http, bot, fake, rq.CHANNEL)
        await wait_open(db_url, post_id)
        burst = await burst_until_killed(http, bot, fake, post_id, users)
        stored = await stored_answers(db_url, post_id)
        acked = burst.acknowledged
        lost = len(acked - set(stored))
        retry = {u for u in acked if any(RETRY_TEXT in t for t in told(fake, u))}
        again = BotProcess(db_url, fake.api_url, work / f"kill9-{db}.log")
        again.port = bot.port
        await again.start()
        await asyncio.gather(
            *(
                click(http, again.url, fake, post_id, u, users.index(u) % 4, retry_num=1)
                for u in sorted(burst.unacknowledged)
            )
        )
        final = await stored_answers(db_url, post_id)
        await again.terminate()
    return Row(
        "kill9",
        db,
        n,
        len(acked),
        len(set(stored) & acked),
        len(retry),
        lost,
        sum(c - 1 for c in final.values()),
        failing_after_recovery=len(set(users) - set(final)),
        note=f"killed after {len(acked)} acks; after redelivery {len(final)}/{n} stored",
    )


async def replicas(db_url: str, db: str, work: Path, users_per_replica: int) -> Row:
    async with FakeSlack(team=rq.TEAM) as fake, unlimited_client(timeout=60) as http:
        a = BotProcess(db_url, fake.api_url, work / f"replica-a-{db}.log")
        b = BotProcess(db_url, fake.api_url, work / f"replica-b-{db}.log")
        await asyncio.gather(a.start(), b.start())
        posts = [await ask(http, a, fake, f"C0Q{i}") for i in range(4)]
        for p in posts:
            await wait_open(db_url, p)
        clicks = []
        for bot, tag, order in ((a, "A", posts), (b, "B", list(reversed(posts)))):
            for i in range(users_per_replica):
                user = f"U{tag}{i:05d}"
                for p in order:
                    channel = f"C0Q{posts.index(p)}"
                    clicks.append(click(http, bot.url, fake, p, user, i % 4, channel=channel))
        statuses = await asyncio.gather(*clicks)
        stored_by_post = [await stored_answers(db_url, p) for p in posts]
        users = [f"U{t}{i:05d}" for t in "AB" for i in range(users_per_replica)]
        all_stored = {u for s in stored_by_post for u in s}
        await _settle(fake, users, all_stored, 15)
        texts = [t for u in users for t in told(fake, u)]
        errors = sum(1 for t in texts if RETRY_TEXT in t or WENT_WRONG in t)
        stored = sum(len(s) for s in stored_by_post)
        await asyncio.gather(a.terminate(), b.terminate())
    total = len(statuses)
    return Row(
        "replicas",
        db,
        total,
        sum(1 for s in statuses if s == 200),
        stored,
        errors,
        max(0, sum(1 for s in statuses if s == 200) - stored - errors),
        sum(c - 1 for s in stored_by_post for c in s.values()),
        errors_to_users=errors,
    )


async def db_outage(db_url: str, work: Path, rate: int, seconds: float, down: float) -> Row:
    log = work / "outage-postgresql.log"
    async with proxied_bot(db_url, log) as pb:
        proxy, fake, http, bot, post_id = pb.proxy, pb.fake, pb.http, pb.bot, pb.post_id
        lines_before = len(log.read_text().splitlines())
        n = int(rate * seconds)
        users = [f"U{i:05d}" for i in range(n)]
        burst = Burst()
        started = time.monotonic()

        async def one(i: int, u: str) -> None:
            burst.status[u] = await click(http, bot.url, fake, post_id, u, i % 4)

        async def outage() -> None:
            await asyncio.sleep(2.0)
            await proxy.refuse()
            await asyncio.sleep(down)
            await proxy.accept()

        cut = asyncio.create_task(outage())
        tasks = []
        for i, u in enumerate(users):  # paced: `rate` clicks a second
            tasks.append(asyncio.create_task(one(i, u)))
            await asyncio.sleep(max(0.0, started + (i + 1) / rate - time.monotonic()))
        await asyncio.gather(*tasks, cut)
        stored = await stored_answers(db_url, post_id)
        await _settle(fake, users, set(stored), 20)
        text = log.read_text().splitlines()[lines_before:]
        retry = {u for u in users if any(RETRY_TEXT in t for t in told(fake, u))}
        acked = burst.acknowledged
        lost = len(acked - set(stored) - retry)
        await asyncio.gather(
            *(click(http, bot.url, fake, post_id, u, users.index(u) % 4) for u in sorted(retry))
        )
        final = await stored_answers(db_url, post_id)
        await bot.terminate()
    return Row(
        "db_outage",
        "postgresql",
        n,
        len(acked),
        len(set(stored)),
        len(retry),
        lost,
        sum(c - 1 for c in final.values()),
        failing_after_recovery=len(retry - set(final)),
        note=f"{len(text)} log lines, {sum('Traceback' in t for t in text)} tracebacks",
    )


async def main(args: argparse.Namespace) -> list[Row]:
    rows: list[Row] = []
    s = args.scale
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for db in ["sqlite", "postgresql"] if args.db == "both" else [args.db]:
            for scenario in ("kill9", "replicas"):
                if db == "sqlite":
                    url = f"sqlite+aiosqlite:///{work / f'{scenario}.db'}"
                    from storage.engine import create_engine, upgrade

                    engine = create_engine(url)
                    await upgrade(engine)
                    await engine.dispose()
                else:
                    found = await pg_database(PG_DEFAULT, scenario)
                    if found is None:
                        continue
                    url = found
                try:
                    if scenario == "kill9":
                        rows.append(await kill9(url, db, work, int(2000 * s)))
                    else:
                        rows.append(await replicas(url, db, work, int(525 * s)))
                finally:
                    if db == "postgresql":
                        await drop_pg(PG_DEFAULT, url)
                print(rows[-1], flush=True)
            if db == "postgresql":
                url_or_none = await pg_database(PG_DEFAULT, "outage")
                if url_or_none is not None:
                    try:
                        rows.append(await db_outage(url_or_none, work, 100, 14 * s, 10 * s))
                    finally:
                        await drop_pg(PG_DEFAULT, url_or_none)
                    print(rows[-1], flush=True)
    return rows


def report(rows: list[Row]) -> None:
    print()
    print(
        "| scenario | db | clicks | acknowledged | stored | told to retry | silently lost "
        "| duplicated | after recovery failing | note |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r.scenario} | {r.db} | {r.clicks} | {r.acknowledged} | {r.stored} | "
            f"{r.told_retry} | {r.lost} | {r.duplicated} | {r.failing_after_recovery} | {r.note} |"
        )
    print()
    lost = sum(r.lost for r in rows)
    dup = sum(r.duplicated for r in rows)
    errors = sum(r.errors_to_users for r in rows if r.scenario == "replicas")
    failing = sum(r.failing_after_recovery for r in rows)
    target("faults_silently_lost", str(lost), "0", lost == 0)
    target("faults_duplicated", str(dup), "0", dup == 0)
    target("faults_replica_errors_to_users", str(errors), "0", errors == 0)
    target("faults_failing_after_recovery", str(failing), "0", failing == 0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--scale", type=float, default=1.0)
    report(asyncio.run(main(parser.parse_args())))
