"""Family `reserved-after-frees`: a few mallocs and frees; reserved or allocated memory.

Teaches that `del` returns a block to the cache, not to the driver; that later requests
reuse cached free blocks of a fitting size and pool; and the gap between requested,
allocated and reserved bytes.
"""

from __future__ import annotations

from typing import Any

from bot.i18n import Text
from gpu_runner.sim import allocation_size, round_size
from questions.families.misconceptions import (
    allocated_not_reserved,
    every_request_summed,
    freed_memory_returns,
    live_segments_only,
    no_reuse,
    peak_not_current,
    requested_live_bytes,
    reserved_not_allocated,
)
from questions.families.model import Candidate, Draft, trace_family
from questions.families.narrate import (
    ALLOCATED,
    ALLOCATOR_DOCS,
    RESERVED,
    STATS_DOCS,
    narrated_steps,
    ops_prompt,
)
from questions.families.sizes import KIB, MIB
from questions.families.space import Space, grid
from questions.families.trace import Op, free, malloc, replay_ops, replay_value, trace_draft

SIZES = tuple(
    int(x)
    for x in (
        300 * KIB,
        512 * KIB,
        768 * KIB,
        100_000,
        1.5 * MIB,
        3 * MIB,
        5 * MIB,
        8 * MIB,
        12 * MIB,
        15 * MIB,
        18 * MIB,
        19.5 * MIB,
        24 * MIB,
        40 * MIB,
    )
)
ASKS = (RESERVED, ALLOCATED)
# added to every size, so that requested, rounded and page-rounded bytes differ
JITTER = (1, 1000, 4097)
# op templates: "m<size key>" allocates the next name, "f<name>" frees a name
TEMPLATES = {
    "a": ("s1", "s2", "fa", "s3"),
    "b": ("s1", "s2", "s3", "fb", "s4"),
    "c": ("s1", "fa", "s2", "s3"),
    "d": ("s1", "s2", "fa", "fb", "s3", "s4"),
}
SPACE = Space(
    tuple(
        grid(name, **{k: SIZES for k in tpl if k.startswith("s")}, jitter=JITTER, ask=ASKS)
        for name, tpl in TEMPLATES.items()
    )
)


def template_ops(template: tuple[str, ...], params: dict[str, Any]) -> list[Op]:
    names = iter("abcdefgh")
    ops: list[Op] = []
    for step in template:
        if step.startswith("s"):
            ops.append(malloc(next(names), int(params[step]) + int(params.get("jitter", 0))))
        else:
            ops.append(free(step[1:]))
    return ops


def _segments_each(sizes: list[int]) -> int:
    return sum(allocation_size(round_size(n, (0,) * 16)) for n in sizes)


def _reserved_candidates(
    ops: list[Op], stats: dict[str, int], inputs: dict[str, Any]
) -> list[Candidate]:
    mallocs = [int(op[2]) for op in ops if op[0] == "malloc"]
    live = _live_sizes(ops)
    return [
        freed_memory_returns(inputs),
        allocated_not_reserved(stats[ALLOCATED]),
        requested_live_bytes(stats["requested_bytes.all.current"]),
        live_segments_only(inputs),
        no_reuse(inputs),
        every_request_summed(stats),
        Candidate(
            "fixed-segment-per-tensor",
            sum(2 * MIB if n <= MIB else 20 * MIB for n in mallocs),
            Text("a 2 or 20 MiB segment each; big tensors get their own size."),
        ),
        Candidate(
            "one-segment-per-live-tensor",
            _segments_each(live),
            Text("a segment per live tensor; freed ones stay, small ones share."),
        ),
        Candidate(
            "native-and-expandable-confused",
            replay_value(inputs, conf="expandable_segments:True"),
            Text("the figure with expandable_segments:True, which is off by default."),
        ),
        Candidate(
            "allocated-rounded-to-2mib",
            -(-stats[ALLOCATED] // (2 * MIB)) * 2 * MIB,
            Text("memory_allocated() rounded to 2 MiB; whole cached segments count."),
        ),
        Candidate(
            "reserved-is-peak-allocated",
            stats["allocated_bytes.all.peak"],
            Text("the peak of memory_allocated(); reserved counts whole segments."),
        ),
        Candidate(
            "every-block-summed",
            stats["allocated_bytes.all.allocated"],
            Text("every block ever handed out; segments are reused."),
        ),
        Candidate(
            "cached-bytes-added-twice",
            2 * stats[RESERVED] - stats[ALLOCATED],
            Text("adds the cached free bytes again; reserved already holds them."),
        ),
        Candidate(
            "power2-divisions-by-default",
            replay_value(inputs, conf="roundup_power2_divisions:4"),
            Text("the figure with roundup_power2_divisions:4 (off by default)."),
        ),
    ]


def _allocated_candidates(
    ops: list[Op], stats: dict[str, int], inputs: dict[str, Any]
) -> list[Candidate]:
    live = _live_sizes(ops)
    last = next(op for op in reversed(ops) if op[0] == "malloc")
    return [
        reserved_not_allocated(stats[RESERVED]),
        requested_live_bytes(stats["requested_bytes.all.current"]),
        live_segments_only(inputs),
        peak_not_current(stats, ALLOCATED),
        Candidate(
            "freed-tensors-still-counted",
            stats["allocated_bytes.all.allocated"],
            Text("still counts the freed tensors' blocks."),
        ),
        Candidate(
            "only-the-last-tensor",
            round_size(int(last[2]), (0,) * 16),
            Text("only the last tensor's block; every live block counts."),
        ),
        Candidate(
            "large-pool-only",
            stats["allocated_bytes.large_pool.current"],
            Text("the large pool alone; small-pool blocks count too."),
        ),
        Candidate(
            "one-segment-per-live-tensor",
            _segments_each(live),
            Text("a whole segment per live tensor; only the blocks are allocated."),
        ),
        Candidate(
            "page-rounded-blocks",
            sum(-(-n // (4 * KIB)) * 4 * KIB for n in live),
            Text("4 KiB pages per tensor; blocks round to 512 B."),
        ),
    ]


def _live_sizes(ops: list[Op]) -> list[int]:
    live: dict[str, int] = {}
    for op in ops:
        if op[0] == "malloc":
            live[str(op[1])] = int(op[2])
        elif op[0] == "free":
            live.pop(str(op[1]))
    return list(live.values())


def build(variant: str, params: dict[str, Any]) -> Draft:
    ask = str(params["ask"])
    ops = template_ops(TEMPLATES[variant], params)
    inputs, run = replay_ops(ops, ask)
    answer = run.value(ask)
    steps = narrated_steps(run.results, ask)
    candidates = (_reserved_candidates if ask == RESERVED else _allocated_candidates)(
        ops, run.stats, inputs
    )
    return trace_draft(
        "caching-allocator" if ask == RESERVED else "memory-stats",
        2 if len(ops) <= 4 else 3,
        inputs,
        ops_prompt(ops, ask),
        steps,
        answer,
        candidates,
        (ALLOCATOR_DOCS, STATS_DOCS),
    )


FAMILY = trace_family(
    id="reserved-after-frees",
    topic="caching-allocator",
    difficulty=(2, 3),
    description=(
        "A few mallocs and frees, then memory_reserved() or memory_allocated(): freed "
        "blocks stay cached and are reused by requests that fit"
    ),
    space=SPACE,
    build=build,
    rank_weights=(1.35, 0.75, 0.65, 1.25),  # reserved memory sits high among its misconceptions
)
