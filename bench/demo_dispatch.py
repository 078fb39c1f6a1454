"""Benchmark: demo dispatch overhead (submit → demo code starts).

Side by side in one run:
- warm: the executor's fork server (torch and matplotlib preloaded), locally and through
  Celery (an in-process worker on the local Redis);
- cold: a plain subprocess that imports torch (or matplotlib where torch is not
  installed, as the output then says), which is what a demo would pay without the server.

Targets: warm ≤ 150 ms locally, ≤ 300 ms through Celery, and ≥ 10× less than cold.
Prints one line per target, ``target <name>: <measured> (goal <goal>) PASS|FAIL``, and
exits 0 either way. Figures are medians. Run from the repository root:
``.venv/bin/python bench/demo_dispatch.py``.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bot.domain import DemoJob, Locale
from gpu_runner.demos import Demo, DemoKind, DemoOutput, Registry, RunContext
from gpu_runner.executor import Executor, ExecutorConfig

SOURCE = "bench.demo_dispatch:registry"
REDIS_URL = os.environ.get("QUIZBOT_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
LOCAL_RUNS, CELERY_RUNS, COLD_RUNS = 20, 10, 5


def _noop(ctx: RunContext) -> DemoOutput:
    return DemoOutput("noop")


def registry() -> Registry:
    """A registry with one demo that does nothing: only the dispatch is measured."""
    return Registry.of([Demo("noop", "No-op", DemoKind.TORCH, _noop)], SOURCE)


def cold_subprocess() -> tuple[list[float], str]:
    module = "torch" if importlib.util.find_spec("torch") else "matplotlib.pyplot"
    code = f"import time, {module}; print(repr(time.time()))"
    samples = []
    for _ in range(COLD_RUNS):
        t0 = time.time()
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
        ).stdout
        samples.append(float(out.strip()) - t0)
    return samples, module


def local(executor: Executor) -> list[float]:
    samples = []
    for i in range(LOCAL_RUNS + 3):
        ex = executor.submit(DemoJob(i, "noop", Locale.EN))
        ex.result(30)
        if i >= 3 and ex.started_at is not None:  # the first few warm the caches
            samples.append(ex.started_at - ex.submitted_at)
    return samples


def celery(executor: Executor) -> list[float] | str:
    try:
        import redis

        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except Exception as exc:  # the benchmark reports, it does not fail
        return f"unavailable (Redis at {REDIS_URL}: {type(exc).__name__})"
    from celery.contrib.testing.worker import start_worker

    from gpu_runner.celery_runner import make_celery_app, task_id

    app = make_celery_app(
        REDIS_URL, queue=f"quizbot-bench-{uuid.uuid4().hex[:8]}", executor=lambda: executor
    )
    samples = []
    with start_worker(app.app, pool="solo", perform_ping_check=False, loglevel="ERROR"):
        for i in range(CELERY_RUNS + 2):
            run_id = uuid.uuid4().int % 10**9
            payload = {
                "run_id": run_id,
                "demo": "noop",
                "locale": "en",
                "params": {},
                "simulate": False,
            }
            t0 = time.time()
            result = app.task.apply_async(
                args=[payload], task_id=task_id(run_id, app.queue), queue=app.queue
            )
            data = result.get(timeout=30)
            if i >= 2:
                samples.append(float(data["started_at"]) - t0)
    return samples


def line(name: str, measured: str, goal: str, ok: bool) -> None:
    print(f"target {name}: {measured} (goal {goal}) {'PASS' if ok else 'FAIL'}")


def main() -> int:
    import warnings

    warnings.simplefilter("ignore", DeprecationWarning)  # celery's redis backend (setex)
    t0 = time.perf_counter()
    with Executor(ExecutorConfig(registry=SOURCE)) as executor:
        info = executor.info
        started = time.perf_counter() - t0
        local_s = local(executor)
        celery_s = celery(executor)
    cold_s, module = cold_subprocess()
    med = {"local": statistics.median(local_s), "cold": statistics.median(cold_s)}
    print(
        f"fork server: torch {info.torch or 'not installed'}, start {started:.2f} s "
        f"(preload {info.preload_s:.2f} s), {info.gpus} GPU(s)"
    )
    print(
        f"cold baseline: `python -c 'import {module}'`"
        + (
            ""
            if module == "torch"
            else " — torch is not installed, so the cold baseline imports matplotlib instead"
        )
    )
    print(
        f"medians: local warm {med['local'] * 1e3:.1f} ms over {len(local_s)} runs; "
        f"cold {med['cold'] * 1e3:.0f} ms over {len(cold_s)} runs"
    )
    line("local_warm_dispatch", f"{med['local'] * 1e3:.1f} ms", "≤ 150 ms", med["local"] <= 0.150)
    line(
        "local_vs_cold",
        f"{med['cold'] / med['local']:.0f}×",
        "≥ 10×",
        med["cold"] / med["local"] >= 10,
    )
    if isinstance(celery_s, str):
        line("celery_warm_dispatch", celery_s, "≤ 300 ms", False)
        line("celery_vs_cold", celery_s, "≥ 10×", False)
    else:
        med["celery"] = statistics.median(celery_s)
        print(f"medians: celery warm {med['celery'] * 1e3:.1f} ms over {len(celery_s)} runs")
        line(
            "celery_warm_dispatch",
            f"{med['celery'] * 1e3:.1f} ms",
            "≤ 300 ms",
            med["celery"] <= 0.300,
        )
        line(
            "celery_vs_cold",
            f"{med['cold'] / med['celery']:.0f}×",
            "≥ 10×",
            med["cold"] / med["celery"] >= 10,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
