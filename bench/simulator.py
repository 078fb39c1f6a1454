"""Benchmark of the allocator simulator: random malloc/free traces of 1,000,000 events.

    .venv/bin/python bench/simulator.py [--events 1000000] [--live 1000] [--seed 0]

The trace keeps about `--live` blocks alive (60 % small requests up to 1 MiB, 37 % of
1-64 MiB, 3 % of 64-512 MiB; 10 % on a second stream) on a simulated 80 GiB GPU. It is
generated before timing; the timed loop is what trace replay does per event. Speed is the
best of two runs per configuration, in process CPU time (``time.process_time``): on a
shared machine wall-clock time measures the neighbours' load, so it is printed beside it.
Memory is measured with tracemalloc at 100k and at the last event of one run: the
allocator's state must grow with the live and cached blocks, not with the number of events.
The last lines are one per target:
``target <name>: <measured> (goal <goal>) PASS|FAIL``; the exit code is 0 either way.
"""

from __future__ import annotations

import argparse
import random
import time
import tracemalloc
from array import array
from dataclasses import dataclass

from gpu_runner.sim import Block, CachingAllocator, GiB, MiB, OutOfMemoryError

GOAL_EVENTS_PER_SECOND = 200_000
GOAL_MILLION_SECONDS = 5.0
GOAL_MEMORY_GROWTH_MIB = 2.0
CHECKPOINT = 100_000


@dataclass(frozen=True, slots=True)
class Trace:
    is_malloc: bytearray  # 1: malloc, 0: free
    sizes: array[int]  # bytes for a malloc
    picks: array[int]  # index into the live list for a free
    streams: bytearray


def make_trace(events: int, live_target: int, seed: int) -> Trace:
    rng = random.Random(seed)
    is_malloc = bytearray(events)
    sizes = array("q", bytes(8 * events))
    picks = array("q", bytes(8 * events))
    streams = bytearray(events)
    live = 0
    for i in range(events):
        # drift towards the target so the live set stays near it
        if live == 0 or rng.random() < 0.5 + (live_target - live) / (4 * live_target):
            is_malloc[i] = 1
            band = rng.random()
            if band < 0.6:
                sizes[i] = int(2 ** rng.uniform(0, 20))
            elif band < 0.97:
                sizes[i] = int(2 ** rng.uniform(20, 26))
            else:
                sizes[i] = int(2 ** rng.uniform(26, 29))
            streams[i] = 1 if rng.random() < 0.1 else 0
            live += 1
        else:
            picks[i] = rng.randrange(live)
            live -= 1
    return trace_of(is_malloc, sizes, picks, streams)


def trace_of(
    is_malloc: bytearray, sizes: array[int], picks: array[int], streams: bytearray
) -> Trace:
    return Trace(is_malloc, sizes, picks, streams)


def run(alloc: CachingAllocator, trace: Trace, start: int, stop: int, live: list[Block]) -> int:
    """Replay events [start, stop); returns the number of OOMs."""
    malloc, free = alloc.malloc, alloc.free
    is_malloc, sizes, picks, streams = trace.is_malloc, trace.sizes, trace.picks, trace.streams
    ooms = 0
    for i in range(start, stop):
        if is_malloc[i]:
            try:
                live.append(malloc(sizes[i], streams[i]))
            except OutOfMemoryError:
                ooms += 1
        elif live:
            j = picks[i] % len(live)
            block = live[j]
            live[j] = live[-1]
            live.pop()
            free(block)
    return ooms


def timed(conf: str, trace: Trace, repeats: int = 2) -> tuple[float, float, CachingAllocator, int]:
    """Best CPU seconds and best wall seconds of `repeats` runs, the last allocator, its OOMs."""
    best_cpu = best_wall = float("inf")
    alloc = CachingAllocator(80 * GiB, conf=conf)
    ooms = 0
    for _ in range(repeats):
        alloc = CachingAllocator(80 * GiB, conf=conf)
        cpu, wall = time.process_time(), time.perf_counter()
        ooms = run(alloc, trace, 0, len(trace.is_malloc), [])
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
    return best_cpu, best_wall, alloc, ooms


def memory_growth(conf: str, trace: Trace) -> tuple[int, int, int, int]:
    """Traced bytes and live blocks at the checkpoint and at the end of one run."""
    events = len(trace.is_malloc)
    live: list[Block] = []
    tracemalloc.start()
    alloc = CachingAllocator(80 * GiB, conf=conf)
    run(alloc, trace, 0, min(CHECKPOINT, events), live)
    at_checkpoint = tracemalloc.get_traced_memory()[0]
    live_at_checkpoint = len(live)
    run(alloc, trace, min(CHECKPOINT, events), events, live)
    at_end = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return at_checkpoint, at_end, live_at_checkpoint, len(live)


def target(name: str, measured: str, goal: str, ok: bool) -> str:
    return f"target {name}: {measured} (goal {goal}) {'PASS' if ok else 'FAIL'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--live", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    started = time.perf_counter()
    trace = make_trace(args.events, args.live, args.seed)
    elapsed = time.perf_counter() - started
    print(f"trace: {args.events:,} events, ~{args.live} live blocks, generated in {elapsed:.2f} s")
    speeds = {}
    for label, conf in (("native", ""), ("expandable", "expandable_segments:True")):
        seconds, wall, alloc, ooms = timed(conf, trace)
        speeds[label] = (seconds, args.events / seconds)
        stats = alloc.memory_stats()
        print(
            f"{label:>10}: {seconds:.2f} s CPU ({wall:.2f} s wall), "
            f"{args.events / seconds:,.0f} events/s; peak reserved "
            f"{stats['reserved_bytes.all.peak'] / GiB:.2f} GiB, peak allocated "
            f"{stats['allocated_bytes.all.peak'] / GiB:.2f} GiB, {ooms} OOMs"
        )
    before, after, live_before, live_after = memory_growth("", trace)
    growth = (after - before) / MiB
    print(
        f"    memory: {before / MiB:.2f} MiB traced at {CHECKPOINT:,} events ({live_before} live), "
        f"{after / MiB:.2f} MiB at {args.events:,} ({live_after} live)"
    )
    lines = [
        target(
            f"events_per_second_{label}",
            f"{rate:,.0f}",
            f">= {GOAL_EVENTS_PER_SECOND:,}",
            rate >= GOAL_EVENTS_PER_SECOND,
        )
        for label, (_seconds, rate) in speeds.items()
    ]
    native_seconds = speeds["native"][0] * 1_000_000 / args.events
    lines.append(
        target(
            "million_event_replay_seconds",
            f"{native_seconds:.2f} s",
            f"<= {GOAL_MILLION_SECONDS:.0f} s",
            native_seconds <= GOAL_MILLION_SECONDS,
        )
    )
    lines.append(
        target(
            "memory_growth_100k_to_end",
            f"{growth:+.2f} MiB",
            f"<= {GOAL_MEMORY_GROWTH_MIB:.0f} MiB",
            growth <= GOAL_MEMORY_GROWTH_MIB,
        )
    )
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
