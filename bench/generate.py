"""Benchmark of generated questions: one channel draws 10,000, each validated like a bank file.

    .venv/bin/python bench/generate.py [--count 10000] [--channel slack:T1:C1]
    .venv/bin/python bench/generate.py --form [--per-family 1000] [--seed 7]
    .venv/bin/python bench/generate.py --exhaustive

``--form`` measures what the form of the choices gives away, per family, on 1,000
questions: the answer's rank among the four values (each 25 % +- 5) and the best of the
form-only rules of `questions.families.guessers` (at most 35 %); the tests run the same
on a smaller sample with a sampling margin. ``--exhaustive`` builds every scenario of every
family whose space has at most 10,000 and checks that each one assembles, with its whole
explanation (every step and note, both locales) and a prompt within the bank's limit.

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


def form(per_family: int, seed: int) -> None:
    """Rank shares and the best form-only rule per family, against the limits."""
    from questions.families.guessers import HIT_MAX, RANK_SHARE, hit_rates, rank_shares

    families = default_families()
    low, high = RANK_SHARE
    worst_rank, worst_hit, uniform = 0.0, 0.0, 0
    print(f"form: {per_family:,} questions per family, seed {seed}")
    print(f"{'family':<26} {'ms/q':>6}  ranks (smallest..largest)   best form-only rule")
    for family in families:
        cpu0 = time.thread_time()
        questions = [generate(family, seed, i) for i in range(per_family)]
        ms = (time.thread_time() - cpu0) * 1000 / per_family
        shares = rank_shares(questions)
        rates = hit_rates(questions)
        best = max(rates, key=lambda name: rates[name])
        worst_rank = max(worst_rank, *(abs(x - 0.25) for x in shares))
        worst_hit = max(worst_hit, rates[best])
        uniform += all(low <= x <= high for x in shares)
        ranks = " ".join(f"{x:.3f}" for x in shares)
        print(f"{family.id:<26} {ms:>6.2f}  {ranks}   {best} {rates[best]:.3f}")
    target("ranks_uniform", f"{uniform}/{len(families)} families", "all", uniform == len(families))
    target("rank_share_deviation", f"{worst_rank:.3f}", "<= 0.050", worst_rank <= 0.05)
    target("best_form_only_rule", f"{worst_hit:.3f}", f"<= {HIT_MAX:.2f}", worst_hit <= HIT_MAX)


def exhaustive(limit: int = 10_000) -> None:
    """Every scenario of the enumerable families: assembled, in full, prompt in bounds."""
    from bot.domain import Locale
    from questions.families.assemble import assemble
    from questions.families.model import GeneratedQuestion
    from questions.schema import PROMPT_MAX
    from tests.questions.families.explained import explanation_in_full

    families = [f for f in default_families() if f.space.size <= limit]
    total = failures = 0
    for family in families:
        bad = 0
        for scenario in range(family.space.size):
            total += 1
            try:
                draft = family.build(*family.space.decode(scenario))
                g: GeneratedQuestion = assemble(family, draft, seed=0, index=0, scenario=scenario)
            except AssertionError as exc:
                bad += 1
                print(f"    {family.id} scenario {scenario}: {exc}")
                continue
            for locale in Locale:
                text = g.question.text(locale)
                full = explanation_in_full(draft, g, locale)
                if text.explanation != full or len(text.prompt) > PROMPT_MAX:
                    bad += 1
                    print(f"    {family.id} scenario {scenario} {locale}: cut or too long")
        failures += bad
        print(f"{family.id:<26} {family.space.size:>6} scenarios, {bad} failing")
    skipped = [f.id for f in default_families() if f.space.size > limit]
    print(f"not enumerated (over {limit:,} scenarios; sampled by the tests): {', '.join(skipped)}")
    target("scenarios_in_full", f"{total - failures:,}/{total:,}", "all", failures == 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--channel", default="slack:T1:C1")
    parser.add_argument("--form", action="store_true", help="rank and form-only rules")
    parser.add_argument("--per-family", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--exhaustive", action="store_true", help="every small space whole")
    args = parser.parse_args()
    if args.form:
        form(args.per_family, args.seed)
        return
    if args.exhaustive:
        exhaustive()
        return

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
