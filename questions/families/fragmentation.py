"""Family `fragmentation-fit`: holes in a cached segment, then one more request.

One big tensor is freed (its segment stays cached), `k` equal tensors are carved from it,
every other one is freed: `k/2` holes that cannot merge. Does the next request fit a hole,
or does it need a new segment although the free bytes add up to enough (spec 3, Q1/Q3)?
"""

from __future__ import annotations

from typing import Any

from bot.i18n import Localized, Text
from gpu_runner.sim import allocation_size, round_size
from questions.families.misconceptions import (
    allocated_not_reserved,
    every_request_summed,
    freed_memory_returns,
    no_reuse,
)
from questions.families.model import Candidate, Draft, trace_family
from questions.families.narrate import (
    ALLOCATED,
    ALLOCATOR_DOCS,
    INACTIVE_SPLIT,
    RESERVED,
    STATS_DOCS,
    api,
    conclusion,
    size,
)
from questions.families.sizes import MIB
from questions.families.space import Space, grid
from questions.families.trace import Op, free, malloc, replay_ops, replay_value, trace_draft

# x = j * b: half the ratios fit a hole, half need a new segment
FITS = (0.25, 0.5, 0.6, 0.75, 0.9, 1)
MISSES = (1.1, 1.25, 1.5, 2, 3, 4)
SPACE = Space(
    (
        grid(
            "holes",
            b=(12, 16, 20, 24, 25, 30, 32, 40, 48, 50, 60, 64),
            k=(4, 6, 8, 10, 12, 14, 16),
            j=FITS + MISSES,
            ask=(RESERVED, INACTIVE_SPLIT),
        ),
    )
)

PROMPT = Text(
    "Default allocator settings, empty GPU, uint8 tensors: big = {S}; del big; then {k} "
    "tensors of {b} (t0 to t{last}); del the even-numbered ones (t0, t2, ...); then x = {r}. "
    "What does {api} report then?"
)


def _ops(segment: int, b: int, k: int, r: int) -> list[Op]:
    ops = [malloc("big", segment), free("big")]
    ops += [malloc(f"t{i}", b) for i in range(k)]
    ops += [free(f"t{i}") for i in range(0, k, 2)]
    ops.append(malloc("x", r))
    return ops


def _steps(
    segment: int, b: int, k: int, r: int, grown: int, answer: int, ask: str
) -> list[Localized]:
    holes = k // 2
    steps: list[Localized] = [
        Text(
            "The {k} tensors are cut from big's cached {S}; freeing every other one leaves "
            "{h} holes of {b} that cannot merge.",
            k=k,
            S=size(segment),
            h=holes,
            b=size(b),
        )
    ]
    if grown:
        steps.append(
            Text(
                "x ({r}) is larger than any hole, so it needs a new {g} segment.",
                r=size(r),
                g=size(grown),
            )
        )
    else:
        steps.append(Text("x ({r}) fits in a hole: no new segment.", r=size(r)))
    steps.append(conclusion(ask))
    return steps


def _reserved(inputs: dict[str, Any], stats: dict[str, int], r: int) -> list[Candidate]:
    ops = inputs["ops"]
    before = replay_value(inputs, ops=ops[:-1])
    segment = allocation_size(round_size(r, (0,) * 16))
    out = [
        freed_memory_returns(inputs),
        allocated_not_reserved(stats[ALLOCATED]),
        no_reuse(inputs),
        every_request_summed(stats),
        Candidate(
            "reserved-is-peak-allocated",
            stats["allocated_bytes.all.peak"],
            Text("the peak of memory_allocated(); reserved counts whole segments."),
        ),
    ]
    holes = len([op for op in ops if op[0] == "free"]) - 1
    b = int(ops[2][2])
    if stats[RESERVED] == before:  # x fits in a hole
        # (big's segment never cut would give exactly twice the answer here: left out,
        # a choice whose double is offered must not be a tell)
        return [
            *out,
            Candidate(
                "holes-never-reused",
                before + segment,
                Text("gives x a new segment; it fits in a hole."),
            ),
            Candidate(
                "holes-never-reused-unrounded",
                before + r,
                Text("adds x as a new allocation of its own size; it fits in a hole."),
            ),
            Candidate(
                "holes-given-back",
                before - holes * b + segment,
                Text("as if the holes were given back and x got a segment; they stay cached."),
            ),
            Candidate(
                "new-segment-in-20mib-steps",
                before + -(-r // (20 * MIB)) * 20 * MIB,
                Text("a new segment for x, in 20 MiB steps; x fits in a hole."),
            ),
        ]
    out += [
        Candidate(
            "cached-segment-never-cut",
            before + (len(ops) - holes - 3) * allocation_size(b) + segment,
            Text("as if big's cached segment could not be cut into smaller blocks."),
        ),
        Candidate(
            "new-segment-unrounded",
            before + r,
            Text("adds x's bytes as they are; a new segment is rounded up."),
        ),
        Candidate(
            "holes-given-back",
            stats[RESERVED] - holes * b,
            Text("as if the holes were given back; they stay inside the segment."),
        ),
    ]
    if r >= 10 * MIB:  # below, a new segment is 20 MiB indeed
        out.append(
            Candidate(
                "new-segment-of-20mib-steps",
                before + -(-r // (20 * MIB)) * 20 * MIB,
                Text("x's segment rounded to 20 MiB; from 10 MiB on they round to 2 MiB."),
            )
        )
    out.append(
        Candidate(
            "free-bytes-add-up",
            before,
            Text("adds the holes up; x needs one contiguous free block."),
        )
    )
    return out


def _inactive(
    inputs: dict[str, Any], stats: dict[str, int], b: int, k: int, r: int
) -> list[Candidate]:
    ops = inputs["ops"]
    before = replay_value(inputs, ops=ops[:-1])
    grown = replay_value(inputs, ask=RESERVED) > replay_value(inputs, ops=ops[:-1], ask=RESERVED)
    out = [
        Candidate(
            "request-ignored",
            before,
            Text("the figure before x was allocated."),
        ),
        Candidate(
            "holes-are-releasable",
            0,
            Text("as if the holes were releasable; a used segment's are not."),
        ),
        Candidate(
            "reserved-not-inactive",
            stats[RESERVED],
            Text("all reserved memory, live blocks included."),
        ),
        Candidate(
            "allocated-not-free",
            stats[ALLOCATED],
            Text("that is memory_allocated(), the live blocks, not the free ones."),
        ),
        Candidate(
            "x-subtracted-unrounded",
            max(0, before - r),
            Text("takes x's bytes off the holes; x takes a hole or a new segment."),
        ),
        Candidate(
            "live-blocks-counted",
            before + (k - k // 2) * b + round_size(r, (0,) * 16),
            Text("adds the live tensors' blocks, x's too; only free ones are inactive."),
        ),
        Candidate(
            "one-hole-only",
            b,
            Text("one hole; every free block of a split segment counts."),
        ),
        Candidate(
            "reserved-minus-allocated",
            stats[RESERVED] - stats[ALLOCATED],
            Text("reserved minus allocated; only split segments' free blocks count."),
        ),
    ]
    segment = allocation_size(round_size(r, (0,) * 16))
    block = round_size(r, (0,) * 16)
    if grown:  # the reason each note gives must hold: x got a new segment, or a hole
        return [
            *out,
            Candidate(
                "new-segment-counted-whole",
                before + segment,
                Text("counts x's whole segment; only free parts of split segments count."),
            ),
        ]
    return [
        *out,
        Candidate(
            "used-hole-removed-whole",
            max(0, before - b),
            Text("takes a whole hole out; x is cut from it and its rest stays free."),
        ),
        Candidate(
            "only-the-cut-holes-rest",
            b - block,
            Text("only the rest of the hole x was cut from; the other holes count too."),
        ),
        Candidate(
            "x-segment-sized",
            max(0, before - segment),
            Text("takes off a segment's worth for x; x takes a 512 B-rounded block."),
        ),
    ]


def build(variant: str, params: dict[str, Any]) -> Draft:
    b, k, ask = int(params["b"]) * MIB, int(params["k"]), str(params["ask"])
    r = int(float(params["j"]) * b) - 999  # not a round size: rounding shows
    segment = b * k
    inputs, run = replay_ops(_ops(segment, b, k, r), ask)
    answer = run.value(ask)
    prompt = PROMPT.fill(S=size(segment), k=k, b=size(b), last=str(k - 1), r=size(r), api=api(ask))
    candidates = (
        _reserved(inputs, run.stats, r)
        if ask == RESERVED
        else _inactive(inputs, run.stats, b, k, r)
    )
    return trace_draft(
        "fragmentation",
        3,
        inputs,
        prompt,
        _steps(segment, b, k, r, run.results[-1].grown, answer, ask),
        answer,
        candidates,
        (ALLOCATOR_DOCS, STATS_DOCS),
    )


FAMILY = trace_family(
    id="fragmentation-fit",
    topic="fragmentation",
    difficulty=(3, 3),
    description=(
        "Holes carved in a cached segment, then one more request: does it fit a hole or need "
        "a new segment (memory_reserved, or the non-releasable inactive_split_bytes)"
    ),
    space=SPACE,
    build=build,
    rank_weights=(1.05, 0.95, 0.7, 1.5),  # measured: evens out the ranks
)
