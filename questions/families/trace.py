"""Allocator traces: the canonical, replayable `inputs` of a trace question, and a replay.

The form (issue 16, item 3)::

    {"kind": "allocator-trace", "total_memory": <bytes>, "conf": "<PYTORCH_CUDA_ALLOC_CONF>",
     "memory_fraction": <float or null>,
     "ops": [["malloc", "<name>", <bytes>], ["free", "<name>"], ["empty_cache"], ...],
     "ask": "<a torch.cuda.memory_stats() key>"}

A malloc that runs out of memory raises, and the trace goes on (the name stays unbound).
`run_trace` replays a trace on a fresh `CachingAllocator` and records, per op, what the
allocator did, so that a family can explain it step by step.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from gpu_runner.sim import Block, CachingAllocator, GiB, OutOfMemoryError, SegmentInfo
from questions.families.model import TRACE_KIND, Style, make_draft

KIND: Final = TRACE_KIND
TRACE_DEMO: Final = "allocator-trace"  # the runner demo that replays `inputs` (issue 16.7)
TOTAL_MEMORY: Final = 16 * GiB  # small enough for any GPU a runner has; a power of two,
# so a fraction m / 16384 caps at exactly m MiB
MAX_OPS: Final = 64
MAX_SIZE: Final = 64 * GiB

Op = list[Any]


# A trace question's draft: an exact size by default, shown by the demo that replays it.
trace_draft = partial(make_draft, style=Style.EXACT_SIZE, demo=TRACE_DEMO)


def malloc(name: str, nbytes: int) -> Op:
    return ["malloc", name, nbytes]


def free(name: str) -> Op:
    return ["free", name]


def empty_cache() -> Op:
    return ["empty_cache"]


def trace_inputs(
    ops: list[Op],
    ask: str,
    *,
    conf: str = "",
    memory_fraction: float | None = None,
    total_memory: int = TOTAL_MEMORY,
) -> dict[str, Any]:
    """The canonical inputs of a trace question, checked against the replay bounds."""
    inputs: dict[str, Any] = {
        "kind": KIND,
        "total_memory": total_memory,
        "conf": conf,
        "memory_fraction": memory_fraction,
        "ops": [list(op) for op in ops],
        "ask": ask,
    }
    problems = trace_problems(inputs)
    if problems:
        raise ValueError("; ".join(problems))
    return inputs


def trace_problems(inputs: Mapping[str, Any]) -> list[str]:
    """What is wrong with a trace's shape or bounds ([] when it can be replayed)."""
    problems = []
    ops = inputs.get("ops")
    if not isinstance(ops, list) or not 1 <= len(ops) <= MAX_OPS:
        problems.append(f"ops: {MAX_OPS} at most, at least 1")
        return problems
    live: set[str] = set()
    for i, op in enumerate(ops):
        if op[:1] == ["malloc"] and len(op) == 3:
            if not isinstance(op[2], int) or not 0 < op[2] <= MAX_SIZE:
                problems.append(f"ops[{i}]: size {op[2]!r} is outside 1..{MAX_SIZE} bytes")
            live.add(op[1])
        elif op[:1] == ["free"] and len(op) == 2:
            if op[1] not in live:
                problems.append(f"ops[{i}]: frees {op[1]!r}, which is not allocated")
            live.discard(op[1])
        elif op != ["empty_cache"]:
            problems.append(f"ops[{i}]: {op!r} is not a malloc, free or empty_cache op")
    fraction = inputs.get("memory_fraction")
    if fraction is not None and not (isinstance(fraction, float) and 0.0 < fraction <= 1.0):
        problems.append(f"memory_fraction: {fraction!r} is not a float in (0, 1] or null")
    return problems


@dataclass(frozen=True, slots=True)
class OpResult:
    """What one op did. Sizes in bytes; `grown` and `released` are reserved-memory changes."""

    op: tuple[Any, ...]
    block: int = 0  # the block handed out (malloc)
    small: bool = False  # from the small pool (malloc)
    grown: int = 0  # new segment(s) or newly mapped pages
    released: int = 0  # segments or pages given back (empty_cache, or the OOM retry)
    split: bool = False  # the block was cut from a larger free block
    oom: bool = False
    retried: bool = False  # the release-and-retry path ran
    reserved: int = 0  # after the op
    allocated: int = 0  # after the op

    @property
    def name(self) -> str:
        return str(self.op[1]) if len(self.op) > 1 else ""

    @property
    def request(self) -> int:
        return int(self.op[2]) if self.op[0] == "malloc" else 0

    @property
    def reused(self) -> bool:
        return self.op[0] == "malloc" and not self.oom and self.grown == 0


@dataclass(frozen=True, slots=True)
class TraceRun:
    results: tuple[OpResult, ...]
    stats: dict[str, int]

    def value(self, ask: str) -> int:
        return self.stats[ask]


def new_allocator(inputs: Mapping[str, Any]) -> CachingAllocator:
    alloc = CachingAllocator(int(inputs["total_memory"]), conf=str(inputs["conf"]))
    if inputs.get("memory_fraction") is not None:
        alloc.set_per_process_memory_fraction(float(inputs["memory_fraction"]))
    return alloc


def run_trace(inputs: Mapping[str, Any]) -> TraceRun:
    """Replay the trace on a fresh simulated device, recording each op's effect.

    Reserved memory changes only by new segments (or mapped pages) on a malloc and by
    releases in ``empty_cache`` or a malloc's release-and-retry path; only the latter mixes
    both, so only then are the full statistics read (they cost a dictionary per call).
    """
    alloc = new_allocator(inputs)
    handles: dict[str, Block] = {}
    results = []
    grown_total = 0  # = memory_stats()["reserved_bytes.all.allocated"]
    for op in inputs["ops"]:
        before, retries = alloc.memory_reserved(), alloc.num_alloc_retries
        fields: dict[str, Any] = {}
        if op[0] == "malloc":
            try:
                block = alloc.malloc(op[2])
            except OutOfMemoryError:
                fields["oom"] = True
            else:
                handles[op[1]] = block
                rest = block.next
                fields.update(
                    block=block.size,
                    small=block.small,
                    split=rest is not None and not rest.allocated and rest.mapped,
                )
        elif op[0] == "free":
            alloc.free(handles.pop(op[1]))
        else:
            alloc.empty_cache()
        after = alloc.memory_reserved()
        retried = alloc.num_alloc_retries > retries
        grown = alloc.memory_stats()[_GROWN] - grown_total if retried else max(0, after - before)
        grown_total += grown
        results.append(
            OpResult(
                op=tuple(op),
                grown=grown,
                released=before + grown - after,
                retried=retried,
                reserved=after,
                allocated=alloc.memory_allocated(),
                **fields,
            )
        )
    return TraceRun(tuple(results), alloc.memory_stats())


_RESERVED = "reserved_bytes.all.current"
_GROWN = "reserved_bytes.all.allocated"  # cumulative increases: new segments, mapped pages


def snapshot_after(inputs: Mapping[str, Any]) -> list[SegmentInfo]:
    """``memory_snapshot()`` at the end of the trace (segments and their blocks)."""
    alloc = new_allocator(inputs)
    handles: dict[str, Block] = {}
    for op in inputs["ops"]:
        if op[0] == "malloc":
            with contextlib.suppress(OutOfMemoryError):
                handles[op[1]] = alloc.malloc(op[2])
        elif op[0] == "free":
            alloc.free(handles.pop(op[1]))
        else:
            alloc.empty_cache()
    return alloc.memory_snapshot()


def replay_ops(
    ops: list[Op],
    ask: str,
    *,
    conf: str = "",
    memory_fraction: float | None = None,
) -> tuple[dict[str, Any], TraceRun]:
    """A trace question's canonical inputs (`trace_inputs`) and their replay (`run_trace`)."""
    inputs = trace_inputs(ops, ask, conf=conf, memory_fraction=memory_fraction)
    return inputs, run_trace(inputs)


def replay_value(inputs: Mapping[str, Any], **changes: Any) -> int:
    """`inputs[ask]` after replaying a variant of the trace (a misconception's model)."""
    variant = {**inputs, **changes}
    return run_trace(variant).value(str(variant["ask"]))


def release_after_frees(ops: list[Op]) -> list[Op]:
    """The ops with an ``empty_cache()`` after every free: "del returns memory"."""
    out: list[Op] = []
    for op in ops:
        out.append(op)
        if op[0] == "free":
            out.append(empty_cache())
    return out
