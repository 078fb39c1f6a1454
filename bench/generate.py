"""Benchmark of generated questions: one channel draws 10,000, each validated like a bank file.

    .venv/bin/python bench/generate.py [--count 10000] [--channel slack:T1:C1]

The draws are those of `questions.families.next_for_channel` for one channel (the family
asked least so far, the channel's next index in it), kept incrementally instead of by
re-reading the history. Each question is generated, turned into bank-file data and passed
through the bank validator (`questions.loader.validate_question`); that whole step is what
is timed. The process is pinned to one CPU where the OS allows it. Time per question is
process CPU time (``time.thread_time``): on a shared machine wall-clock time measures the
neighbours' load, so it is printed beside it. "Alike" means the same family and the same
canonical inputs, or the same English prompt.
The last lines are one per target: ``target <name>: <measured> (goal <goal>) PASS|FAIL``;
the exit code is 0 either way.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import median, percentile, target
from bot.bank import question_to_dict
from questions.families import channel_seed, default_families, generate, pick_family
from questions.loader import validate_question

GOAL_P99_MS = 20.0


def pin_to_one_cpu() -> str:
    if not hasattr(os, "sched_setaffinity"):
        return "not pinned (no sched_setaffinity)"
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return f"pinned to CPU {cpu}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--channel", default="slack:T1:C1")
    args = parser.parse_args()

    print(f"generate: {args.count:,} questions for channel {args.channel!r}, {pin_to_one_cpu()}")
    families = default_families()
    seed = channel_seed(args.channel)
    counts = dict.fromkeys(families.ids(), 0)
    cpu_ms: list[float] = []
    wall_ms: list[float] = []
    per_family: dict[str, list[float]] = defaultdict(list)
    invalid: list[str] = []
    scenarios: set[tuple[str, str]] = set()
    prompts: set[str] = set()
    alike = 0
    for _ in range(args.count):
        family = pick_family(counts, seed, families)
        wall0, cpu0 = time.perf_counter(), time.thread_time()
        question = generate(family, seed, counts[family.id])
        problems = validate_question(question_to_dict(question.question))
        cpu = (time.thread_time() - cpu0) * 1000
        wall_ms.append((time.perf_counter() - wall0) * 1000)
        cpu_ms.append(cpu)
        per_family[family.id].append(cpu)
        counts[family.id] += 1
        if problems:
            invalid.append(f"{question.id}: {problems[0]}")
        scenario = (family.id, json.dumps(question.inputs, sort_keys=True))
        prompt = question.question.texts[next(iter(question.question.texts))].prompt
        alike += scenario in scenarios or prompt in prompts
        scenarios.add(scenario)
        prompts.add(prompt)

    print(f"{'family':<26} {'n':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  (CPU time)")
    for family_id, times in per_family.items():
        print(
            f"{family_id:<26} {len(times):>6} {median(times):>8.2f} "
            f"{percentile(times, 99):>8.2f} {max(times):>8.2f}"
        )
    p99_cpu, p99_wall = percentile(cpu_ms, 99), percentile(wall_ms, 99)
    print(
        f"all: p50 {median(cpu_ms):.2f} ms, p99 {p99_cpu:.2f} ms CPU; "
        f"wall-clock p50 {median(wall_ms):.2f} ms, p99 {p99_wall:.2f} ms"
    )
    for problem in invalid[:5]:
        print(f"    invalid: {problem}")
    valid = args.count - len(invalid)
    distinct = args.count - alike
    target(
        "p99_ms_per_question",
        f"{p99_cpu:.2f} ms",
        f"<= {GOAL_P99_MS:.0f} ms",
        p99_cpu <= GOAL_P99_MS,
    )
    target("valid_questions", f"{valid:,}/{args.count:,}", "all", valid == args.count)
    target("distinct_in_one_channel", f"{distinct:,}/{args.count:,}", "all", distinct == args.count)


if __name__ == "__main__":
    main()
