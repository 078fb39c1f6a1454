"""Helpers shared by the benchmarks: percentiles, the `target` line format and the quiz
most benchmarks run on."""

from __future__ import annotations

import random
import statistics
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from bot.bank import QuestionBank
    from bot.clock import Clock
    from bot.features import FeatureFactory, Quiz
    from bot.ports import Chat, FeatureStore


T = TypeVar("T")


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def over_repeats(
    reps: Sequence[Mapping[str, float]], *, fewest: Sequence[str], middle: Sequence[str]
) -> dict[str, float]:
    """One summary of repeated bursts: the lowest of each count in `fewest` (what every
    burst reached) and the median of each figure in `middle` (latencies)."""
    summary = {key: min(r[key] for r in reps) for key in fewest}
    summary.update({key: median([r[key] for r in reps]) for key in middle})
    return summary


def target(name: str, measured: str, goal: str, ok: bool) -> str:
    line = f"target {name}: {measured} (goal {goal}) {'PASS' if ok else 'FAIL'}"
    print(line, flush=True)
    return line


PG_DEFAULT = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"


def _dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


async def pg_database(admin_url: str, label: str, *, migrate: bool = True) -> str | None:
    """A fresh database for one benchmark run (None when PostgreSQL is unreachable).

    `migrate`: bring it to the current schema; drop it with `drop_pg` at the end.
    """
    import os

    import asyncpg

    name = f"quizbot_bench_{label}_{os.getpid()}"
    try:
        conn = await asyncpg.connect(_dsn(admin_url), timeout=3)
    except (OSError, asyncpg.PostgresError) as exc:
        print(f"PostgreSQL not reachable ({exc}); skipping it")
        return None
    await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    url = admin_url.rsplit("/", 1)[0] + "/" + name
    if migrate:
        from storage.engine import create_engine, upgrade

        engine = create_engine(url)
        await upgrade(engine)
        await engine.dispose()
    return url


async def drop_pg(admin_url: str, url: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(_dsn(admin_url))
    await conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
    await conn.close()


async def on_pg(
    admin_url: str, label: str, work: Callable[[str], Awaitable[T]], *, migrate: bool = True
) -> T | None:
    """`work` run on a fresh database (see `pg_database`), dropped afterwards; None when
    PostgreSQL is unreachable."""
    url = await pg_database(admin_url, label, migrate=migrate)
    if url is None:
        return None
    try:
        return await work(url)
    finally:
        await drop_pg(admin_url, url)


def bench_quiz(
    store: FeatureStore,
    chats: Mapping[str, Chat],
    clock: Clock,
    *,
    bank: QuestionBank | None = None,
    features: Sequence[FeatureFactory] | None = None,
    **options: Any,
) -> AbstractAsyncContextManager[Quiz]:
    """`assemble` as the benchmarks run it: the bank's questions only (none generated), no
    ask cooldown, random choices seeded with 1, the basic commands unless `features`."""
    from bot import basics
    from bot.app import assemble
    from bot.config import Settings
    from questions.loader import load_bank

    return assemble(
        store,
        chats,
        bank or load_bank(),
        clock,
        Settings(ask_cooldown=0),
        rng=random.Random(1),
        generated=None,
        features=[basics.feature] if features is None else features,
        **options,
    )
