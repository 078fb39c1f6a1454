"""Family `empty-cache-release`: what ``torch.cuda.empty_cache()`` gives back.

It releases only segments that are entirely free; a segment with one live block stays
reserved whole, its free parts included, and live tensors are never touched (spec 1.11).
"""

from __future__ import annotations

from typing import Any

from bot.i18n import Text
from gpu_runner.sim import allocation_size, round_size
from questions.families.misconceptions import requested_live_bytes
from questions.families.model import Candidate, Draft, trace_family
from questions.families.narrate import (
    ALLOCATED,
    ALLOCATOR_DOCS,
    RESERVED,
    STATS_DOCS,
    narrated_steps,
    ops_prompt,
)
from questions.families.reserved import JITTER, SIZES
from questions.families.space import Space, grid
from questions.families.trace import (
    Op,
    empty_cache,
    free,
    malloc,
    new_allocator,
    replay_ops,
    replay_value,
    trace_draft,
)

RELEASED = "reserved_bytes.all.freed"  # what reserved memory gave back: empty_cache here
PAIRS = ("ab", "ac", "ad", "bc", "bd", "cd")
SPACE = Space(
    (
        grid(
            "release",
            s1=SIZES,
            s2=SIZES,
            s3=SIZES,
            s4=SIZES,
            jitter=JITTER,
            freed=PAIRS,
            ask=(RESERVED, RELEASED),
        ),
    )
)
EMPTY_CACHE_DOCS = "https://pytorch.org/docs/stable/generated/torch.cuda.empty_cache.html"


def _ops(params: dict[str, Any]) -> list[Op]:
    jitter = int(params["jitter"])
    ops = [malloc(name, int(params[f"s{i}"]) + jitter) for i, name in enumerate("abcd", start=1)]
    ops += [free(name) for name in str(params["freed"])]
    ops.append(empty_cache())
    return ops


def _touched(inputs: dict[str, Any]) -> int:
    """Bytes of the segments that held a freed tensor (replayed up to the frees)."""
    ops = inputs["ops"]
    freed = _freed(ops)
    alloc = new_allocator(inputs)
    where = {str(op[1]): alloc.malloc(int(op[2])).ptr for op in ops if op[0] == "malloc"}
    return sum(
        seg["total_size"]
        for seg in alloc.memory_snapshot()
        if any(seg["address"] <= where[name] < seg["address"] + seg["total_size"] for name in freed)
    )


def _reserved(inputs: dict[str, Any], stats: dict[str, int], before: int) -> list[Candidate]:
    ops = inputs["ops"]
    freed_blocks = sum(
        round_size(int(op[2]), (0,) * 16)
        for op in ops
        if op[0] == "malloc" and op[1] in _freed(ops)
    )
    freed_requests = sum(int(op[2]) for op in ops if op[0] == "malloc" and op[1] in _freed(ops))
    live = [int(op[2]) for op in ops if op[0] == "malloc" and op[1] not in _freed(ops)]
    return [
        Candidate(
            "empty-cache-releases-nothing",
            before,
            Text("as if empty_cache() released nothing; whole free segments go."),
        ),
        Candidate(
            "empty-cache-trims-used-segments",
            stats[ALLOCATED],
            Text("trims used segments too; only whole free segments go."),
        ),
        requested_live_bytes(stats["requested_bytes.all.current"]),
        Candidate(
            "empty-cache-frees-everything",
            0,
            Text("frees live tensors too; empty_cache() never touches them."),
        ),
        Candidate(
            "freed-blocks-released",
            before - freed_blocks,
            Text("gives back the freed blocks; only whole free segments go."),
        ),
        Candidate(
            "freed-requests-released",
            before - freed_requests,
            Text("gives back the freed tensors' bytes; only whole free segments go."),
        ),
        Candidate(
            "one-segment-per-live-tensor",
            sum(allocation_size(round_size(n, (0,) * 16)) for n in live),
            Text("a segment per live tensor; small tensors share one."),
        ),
        Candidate(
            "shared-segments-released",
            before - _touched(inputs),
            Text("every segment a freed tensor was in; one with a live block stays."),
        ),
    ]


def _released(inputs: dict[str, Any], stats: dict[str, int], before: int) -> list[Candidate]:
    ops = inputs["ops"]
    freed = _freed(ops)
    freed_sizes = [int(op[2]) for op in ops if op[0] == "malloc" and op[1] in freed]
    return [
        Candidate(
            "empty-cache-releases-nothing",
            0,
            Text("as if empty_cache() released nothing; whole free segments go."),
        ),
        Candidate(
            "empty-cache-frees-everything",
            before,
            Text("frees live tensors too; empty_cache() never touches them."),
        ),
        Candidate(
            "freed-blocks-released",
            sum(round_size(n, (0,) * 16) for n in freed_sizes),
            Text("the freed blocks; only whole free segments go back."),
        ),
        Candidate(
            "freed-requests-released",
            sum(freed_sizes),
            Text("the freed tensors' bytes; only whole free segments go back."),
        ),
        Candidate(
            "empty-cache-trims-used-segments",
            before - stats[ALLOCATED],
            Text("all cached free bytes; free parts of used segments stay."),
        ),
        Candidate(
            "freed-tensors-own-segments",
            sum(allocation_size(round_size(n, (0,) * 16)) for n in freed_sizes),
            Text("a whole segment per freed tensor; small tensors share segments."),
        ),
        Candidate(
            "shared-segments-released",
            _touched(inputs),
            Text("every segment a freed tensor was in; one with a live block stays."),
        ),
    ]


def _freed(ops: list[Op]) -> set[str]:
    return {str(op[1]) for op in ops if op[0] == "free"}


def build(variant: str, params: dict[str, Any]) -> Draft:
    ask = str(params["ask"])
    ops = _ops(params)
    inputs, run = replay_ops(ops, ask)
    answer = run.value(ask)
    before = replay_value(inputs, ops=ops[:-1], ask=RESERVED)
    steps = narrated_steps(run.results, ask)
    candidates = (_reserved if ask == RESERVED else _released)(inputs, run.stats, before)
    return trace_draft(
        "caching-allocator",
        2,
        inputs,
        ops_prompt(ops, ask),
        steps,
        answer,
        candidates,
        (ALLOCATOR_DOCS, EMPTY_CACHE_DOCS, STATS_DOCS),
    )


FAMILY = trace_family(
    id="empty-cache-release",
    topic="caching-allocator",
    difficulty=(2, 2),
    description=(
        "Four tensors, two deleted, then empty_cache(): what stays reserved, and how much "
        "it gave back (only entirely free segments are released)"
    ),
    space=SPACE,
    build=build,
    rank_weights=(1.3, 0.75, 0.9, 1.0),  # few misconceptions release less than the answer
)
