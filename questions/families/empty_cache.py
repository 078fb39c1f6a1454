"""Family `empty-cache-release`: what ``torch.cuda.empty_cache()`` gives back.

It releases only segments that are entirely free; a segment with one live block stays
reserved whole, its free parts included, and live tensors are never touched (spec 1.11).
"""

from __future__ import annotations

from typing import Any

from questions.families.misconceptions import requested_live_bytes
from questions.families.model import Candidate, Draft, Family, Style, Text
from questions.families.narrate import (
    ALLOCATED,
    ALLOCATOR_DOCS,
    RESERVED,
    SEGMENTS,
    conclusion,
    join,
    narrate_run,
    op_text,
    setup,
    size,
    trace_prompt,
)
from questions.families.reserved import SIZES
from questions.families.space import Space, grid
from questions.families.trace import (
    TRACE_DEMO,
    Op,
    empty_cache,
    free,
    malloc,
    replay_value,
    run_trace,
    trace_inputs,
)

PAIRS = ("ab", "ac", "ad", "bc", "bd", "cd")
SPACE = Space(
    (
        grid(
            "release", s1=SIZES, s2=SIZES, s3=SIZES, s4=SIZES, freed=PAIRS, ask=(RESERVED, SEGMENTS)
        ),
    )
)
EMPTY_CACHE_DOCS = "https://pytorch.org/docs/stable/generated/torch.cuda.empty_cache.html"


def _ops(params: dict[str, Any]) -> list[Op]:
    ops = [malloc(name, int(params[f"s{i}"])) for i, name in enumerate("abcd", start=1)]
    ops += [free(name) for name in str(params["freed"])]
    ops.append(empty_cache())
    return ops


def _candidates(ask: str, run_stats: dict[str, int], before: int, live: int) -> list[Candidate]:
    nothing = Text(
        "that assumes empty_cache() releases nothing; whole free segments do go.",
        "υποθέτει ότι το empty_cache() δεν αποδεσμεύει τίποτα· τα εντελώς ελεύθερα τμήματα "
        "φεύγουν.",
    )
    everything = Text(
        "that frees live tensors too; empty_cache() never touches them.",
        "αποδεσμεύει και ζωντανούς τανυστές· το empty_cache() δεν τους αγγίζει ποτέ.",
    )
    if ask == SEGMENTS:
        return [
            Candidate("empty-cache-releases-nothing", before, nothing),
            Candidate(
                "one-segment-per-live-tensor",
                live,
                Text(
                    "that counts one segment per live tensor; small ones share segments.",
                    "μετρά ένα τμήμα ανά ζωντανό τανυστή· οι μικροί μοιράζονται τμήματα.",
                ),
            ),
            Candidate(
                "one-segment-per-freed-tensor",
                max(0, before - 2),
                Text(
                    "that drops one segment per freed tensor; a shared one stays.",
                    "αφαιρεί ένα τμήμα ανά αποδεσμευμένο τανυστή· ένα κοινό τμήμα μένει.",
                ),
            ),
            Candidate("empty-cache-frees-everything", 0, everything),
        ]
    return [
        Candidate("empty-cache-releases-nothing", before, nothing),
        Candidate(
            "empty-cache-trims-used-segments",
            run_stats[ALLOCATED],
            Text(
                "that also trims free parts of segments in use; only whole free segments go.",
                "αφαιρεί και ελεύθερα κομμάτια τμημάτων σε χρήση· φεύγουν μόνο εντελώς "
                "ελεύθερα τμήματα.",
            ),
        ),
        requested_live_bytes(run_stats["requested_bytes.all.current"]),
        Candidate("empty-cache-frees-everything", 0, everything),
    ]


def build(variant: str, params: dict[str, Any]) -> Draft:
    ask = str(params["ask"])
    ops = _ops(params)
    inputs = trace_inputs(ops, ask)
    run = run_trace(inputs)
    answer = run.value(ask)
    before = replay_value(inputs, ops=ops[:-1])
    steps = (
        narrate_run(run.results),
        conclusion(ask, str(answer) if ask == SEGMENTS else size(answer)),
    )
    return Draft(
        topic="caching-allocator",
        difficulty=2,
        inputs=inputs,
        prompt=trace_prompt(setup(""), join(op_text(op) for op in ops), ask),
        steps=steps,
        answer=answer,
        style=Style.COUNT if ask == SEGMENTS else Style.EXACT_SIZE,
        candidates=tuple(_candidates(ask, run.stats, before, live=2)),
        references=(ALLOCATOR_DOCS, EMPTY_CACHE_DOCS),
        demo=TRACE_DEMO,
    )


FAMILY = Family(
    id="empty-cache-release",
    topic="caching-allocator",
    kind="allocator-trace",
    difficulty=(2, 2),
    description=(
        "Four tensors, two deleted, then empty_cache(): what stays reserved, how many "
        "segments remain (only entirely free segments are released)"
    ),
    space=SPACE,
    build=build,
)
