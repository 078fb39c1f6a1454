"""Family `reserved-after-frees`: a few mallocs and frees; reserved or allocated memory.

Teaches that `del` returns a block to the cache, not to the driver; that later requests
reuse cached free blocks of a fitting size and pool; and the gap between requested,
allocated and reserved bytes.
"""

from __future__ import annotations

from typing import Any

from questions.families.misconceptions import (
    allocated_not_reserved,
    every_request_summed,
    freed_memory_returns,
    no_reuse,
    requested_live_bytes,
    reserved_not_allocated,
)
from questions.families.model import Candidate, Draft, Family, Style, Text
from questions.families.narrate import (
    ALLOCATED,
    ALLOCATOR_DOCS,
    RESERVED,
    STATS_DOCS,
    conclusion,
    join,
    narrate_run,
    op_text,
    setup,
    size,
    trace_prompt,
)
from questions.families.space import Space, grid
from questions.families.trace import (
    TRACE_DEMO,
    Op,
    free,
    malloc,
    release_after_frees,
    replay_value,
    run_trace,
    trace_inputs,
)
from questions.families.units import KIB, MIB

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
# op templates: "m<size key>" allocates the next name, "f<name>" frees a name
TEMPLATES = {
    "a": ("s1", "s2", "fa", "s3"),
    "b": ("s1", "s2", "s3", "fb", "s4"),
    "c": ("s1", "fa", "s2", "s3"),
    "d": ("s1", "s2", "fa", "fb", "s3", "s4"),
}
SPACE = Space(
    tuple(
        grid(name, **{k: SIZES for k in tpl if k.startswith("s")}, ask=ASKS)
        for name, tpl in TEMPLATES.items()
    )
)


def template_ops(template: tuple[str, ...], params: dict[str, Any]) -> list[Op]:
    names = iter("abcdefgh")
    ops: list[Op] = []
    for step in template:
        if step.startswith("s"):
            ops.append(malloc(next(names), int(params[step])))
        else:
            ops.append(free(step[1:]))
    return ops


def _candidates(
    ask: str, ops: list[Op], stats: dict[str, int], inputs: dict[str, Any]
) -> list[Candidate]:
    requested = requested_live_bytes(stats["requested_bytes.all.current"])
    if ask == RESERVED:
        return [
            freed_memory_returns(inputs),
            allocated_not_reserved(stats[ALLOCATED]),
            requested,
            no_reuse(inputs),
            every_request_summed(stats),
        ]
    return [
        reserved_not_allocated(stats[RESERVED]),
        requested,
        Candidate(
            "live-tensors-whole-segments",
            replay_value(inputs, ops=release_after_frees(ops), ask=RESERVED),
            Text(
                "that counts the whole segments the live tensors sit in.",
                "μετρά ολόκληρα τα τμήματα όπου βρίσκονται οι ζωντανοί τανυστές.",
            ),
        ),
        Candidate(
            "freed-tensors-still-counted",
            stats["allocated_bytes.all.allocated"],
            Text(
                "that still counts the freed tensors' blocks.",
                "μετρά ακόμη τα μπλοκ των αποδεσμευμένων τανυστών.",
            ),
        ),
    ]


def build(variant: str, params: dict[str, Any]) -> Draft:
    ask = str(params["ask"])
    ops = template_ops(TEMPLATES[variant], params)
    inputs = trace_inputs(ops, ask)
    run = run_trace(inputs)
    answer = run.value(ask)
    steps = (
        narrate_run(run.results),
        conclusion(ask, size(answer)),
    )
    return Draft(
        topic="caching-allocator" if ask == RESERVED else "memory-stats",
        difficulty=2 if len(ops) <= 4 else 3,
        inputs=inputs,
        prompt=trace_prompt(setup(""), join(op_text(op) for op in ops), ask),
        steps=steps,
        answer=answer,
        style=Style.EXACT_SIZE,
        candidates=tuple(_candidates(ask, ops, run.stats, inputs)),
        references=(ALLOCATOR_DOCS, STATS_DOCS),
        demo=TRACE_DEMO,
    )


FAMILY = Family(
    id="reserved-after-frees",
    topic="caching-allocator",
    kind="allocator-trace",
    difficulty=(2, 3),
    description=(
        "A few mallocs and frees, then memory_reserved() or memory_allocated(): freed "
        "blocks stay cached and are reused by requests that fit"
    ),
    space=SPACE,
    build=build,
)
