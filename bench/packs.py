"""Team packs at scale, on SQLite (file, WAL) and PostgreSQL.

    .venv/bin/python bench/packs.py [--rows 10000] [--channels 1000] [--pg URL]

- import: 10,000 CSV rows (prompt, four choices, answer, explanation, topic, difficulty,
  locale, a link) read, validated by the bank's validator and stored in one workspace's
  team pack — `quizbot questions import --approve`'s work (`TeamQuestions.read` then
  `team.add`);
- picks: 1,000 channels of that workspace, each with 50 questions in its history and a
  mix of packs (built-in + team, team only, built-in only; 25% generated in every one).
  A pick is the channel's settings read (which carries the team pack's revision) and
  `QuizService.pick` — the pool for the channel's packs, less retired questions, then
  the choice (no repeat, no topic twice in a row) or a generated question — as `/quiz
  ask` and the scheduler's claims run it. Reading the channel's history (the same with
  or without packs; claims read it in bulk) is reported beside it, and so is the first
  pick, which loads the 10,000-question pack into the process.

Targets: import >= 2,000 rows/s with validation; a pick <= 10 ms p99 on each database.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import PG_DEFAULT, median, on_pg, percentile, target

if TYPE_CHECKING:
    from bot.domain import ChannelSettings
    from storage.store import SqlStore

HISTORY = 50
NOW = datetime(2027, 6, 1, 9, 0, tzinfo=UTC)


def csv_rows(rows: int) -> bytes:
    from questions.tabular import CSV_COLUMNS

    lines = [",".join(CSV_COLUMNS)]
    for i in range(rows):
        locale = "el" if i % 5 == 0 else "en"
        lines.append(
            f"Which node runs nightly job {i}?,gpu-a{i},gpu-b{i},gpu-c{i},gpu-d{i},,"
            f"{'ABCD'[i % 4]},Job {i} is pinned there by its node selector.,"
            f"team-topic-{i % 20},{1 + i % 3},{locale},https://wiki.example.com/jobs/{i}"
        )
    return ("\n".join(lines) + "\n").encode()


async def seed_channels(store: SqlStore, channels: int, ids: list[str]) -> list[ChannelSettings]:
    """Channels with their packs setting and a history of posts (bulk inserts)."""
    from sqlalchemy import insert

    from bot.domain import ChannelRef, ChannelSettings, Platform
    from storage.models import ChannelRow, PostRow, QuestionVersionRow

    rng = random.Random(3)
    mixes = [(True, True), (False, True), (True, False)]
    async with store.sessions.begin() as session:
        await session.execute(
            insert(QuestionVersionRow).values(
                hash="bench", question_id="bench", data="{}", created_at=NOW
            )
        )
        await session.execute(
            insert(ChannelRow),
            [
                {
                    "platform": "slack",
                    "workspace": "TBENCH",
                    "channel": f"C{i:05d}",
                    "locale": "en",
                    "timezone": "UTC",
                    "demo_policy": "off",
                    "created_at": NOW,
                    "generated_share": 25,
                    "builtin_pack": mixes[i % 3][0],
                    "team_pack": mixes[i % 3][1],
                }
                for i in range(channels)
            ],
        )
    async with store.sessions.begin() as session:
        from sqlalchemy import select

        cids = (await session.execute(select(ChannelRow.id).order_by(ChannelRow.id))).scalars()
        posts = [
            {
                "channel_id": cid,
                "question_id": rng.choice(ids),
                "question_hash": "bench",
                "correct_choice": 0,
                "choice_count": 4,
                "kind": "scheduled",
                "state": "closed",
                "locale": "en",
                "created_at": NOW,
            }
            for cid in list(cids)
            for _ in range(HISTORY)
        ]
        await session.execute(insert(PostRow), posts)
    out = []
    for i in range(channels):
        ref = ChannelRef(Platform.SLACK, "TBENCH", f"C{i:05d}")
        out.append(ChannelSettings(ref, builtin_pack=mixes[i % 3][0], team_pack=mixes[i % 3][1]))
    return out


async def run_one(url: str, rows: int, channels: int) -> dict[str, float]:
    from bot import basics
    from bot.app import assemble
    from bot.bank import QuestionBank
    from bot.clock import FakeClock
    from bot.config import Settings
    from bot.domain import Platform
    from bot.team import Origin, Workspace
    from questions.loader import load_bank
    from questions.team import TeamQuestions
    from storage.store import SqlStore

    data = csv_rows(rows)
    workspace = Workspace(Platform.SLACK, "TBENCH")
    async with SqlStore(url, clock=FakeClock(NOW), migrate=url.startswith("sqlite")) as store:
        started = time.perf_counter()
        read = await asyncio.to_thread(TeamQuestions().read, "bench.csv", data)
        added = await store.team.add(
            workspace, read.questions, origin=Origin.IMPORT, approved=True, now=NOW
        )
        import_s = time.perf_counter() - started
        assert len(added) == rows and not read.problems, read.problems[:3]

        bank: QuestionBank = load_bank()
        ids = [q.id for q in read.questions[:2000]] + [q.id for q in bank]
        settings = await seed_channels(store, channels, ids)
        # Picks draw from the bank, the workspace's team pack and generated questions.
        async with assemble(
            store,
            {},
            bank,
            store.clock,
            Settings(ask_cooldown=0),
            rng=random.Random(7),
            generated=True,
            features=[basics.feature],
        ) as quiz:
            service = quiz.service
            histories = {}
            history_s = []
            for s in settings:
                t0 = time.perf_counter()
                posts = await store.posts.history(s.channel)
                history_s.append(time.perf_counter() - t0)
                histories[s.channel] = [p.question_id for p in posts]
            first = time.perf_counter()
            warm = await store.settings.get(settings[0].channel)
            await service.pick(warm.channel, histories[warm.channel], warm)
            cold_s = time.perf_counter() - first
            times = []
            kinds = {"team": 0, "bank": 0, "generated": 0}
            for s in settings:
                t0 = time.perf_counter()
                current = await store.settings.get(s.channel)  # carries the pack revision
                question = await service.pick(s.channel, histories[s.channel], current)
                times.append(time.perf_counter() - t0)
                assert question is not None
                kind = "team" if question.id.startswith("team-") else "bank"
                kinds["generated" if question.id.startswith("gen-") else kind] += 1
    return {
        "import_rows_per_s": rows / import_s,
        "import_s": import_s,
        "cold_ms": cold_s * 1e3,
        "pick_p50_ms": median(times) * 1e3,
        "pick_p99_ms": percentile(times, 99) * 1e3,
        "history_p50_ms": median(history_s) * 1e3,
        **{f"picked_{k}": float(v) for k, v in kinds.items()},
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--channels", type=int, default=1_000)
    parser.add_argument("--pg", default=os.environ.get("QUIZBOT_TEST_POSTGRES_URL", PG_DEFAULT))
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'packs.db'}"
        results["sqlite"] = await run_one(url, args.rows, args.channels)
    pg = await on_pg(args.pg, "packs", lambda url: run_one(url, args.rows, args.channels))
    if pg is not None:
        results["postgresql"] = pg
    for db, r in results.items():
        print(
            f"{db}: import {args.rows:,} rows in {r['import_s']:.2f} s; first pick (loads the "
            f"pack) {r['cold_ms']:.0f} ms; picks p50 {r['pick_p50_ms']:.2f} ms (reading the "
            f"history besides: p50 {r['history_p50_ms']:.2f} ms); picked "
            f"{r['picked_team']:.0f} team, {r['picked_bank']:.0f} built-in, "
            f"{r['picked_generated']:.0f} generated"
        )
    for db in ("sqlite", "postgresql"):
        got = results.get(db)
        if got is None:
            target(f"packs_{db}_measured", "not reachable", "measured", False)
            continue
        rate = got["import_rows_per_s"]
        target(f"packs_import_{db}", f"{rate:,.0f} rows/s", "≥ 2,000 rows/s", rate >= 2000)
        p99 = got["pick_p99_ms"]
        target(f"packs_pick_p99_{db}", f"{p99:.2f} ms", "≤ 10 ms", p99 <= 10)


if __name__ == "__main__":
    asyncio.run(main())
