"""Helpers shared by the benchmarks: percentiles and the `target` line format."""

from __future__ import annotations

import statistics


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def target(name: str, measured: str, goal: str, ok: bool) -> str:
    line = f"target {name}: {measured} (goal {goal}) {'PASS' if ok else 'FAIL'}"
    print(line, flush=True)
    return line
