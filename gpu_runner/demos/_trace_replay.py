"""Replaying an allocator trace's operations on one device, step by step.

`SimTraceDevice` is the simulator exactly as a generated question's answer is computed;
on a GPU the same `replay` drives `_alloc.CudaDevice`. After every step it keeps what
the plot and the comparison need: the outcome, allocated and reserved bytes, the asked
statistic, the segment map and the device allocation counters.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gpu_runner.demos._alloc import AllocatorOOM, Handle, SimDevice, stat
from gpu_runner.demos._plot import Segment, segments_of


class TraceDevice(Protocol):
    def alloc(self, nbytes: int) -> Handle: ...
    def free(self, handle: Handle) -> None: ...
    def empty_cache(self) -> None: ...
    def stats(self) -> dict[str, int]: ...
    def snapshot(self) -> list[dict[str, Any]]: ...


class SimTraceDevice(SimDevice):
    """The simulator exactly as a question's answer is computed: a fresh allocator of
    the trace's size and settings, `set_per_process_memory_fraction` when one is given."""

    def __init__(self, inputs: Mapping[str, Any]) -> None:
        super().__init__(str(inputs["conf"]), int(inputs["total_memory"]))
        if inputs["memory_fraction"] is not None:
            self._a.set_per_process_memory_fraction(float(inputs["memory_fraction"]))


@dataclass(frozen=True, slots=True)
class Step:
    op: list[Any]
    outcome: str  # "ok", "oom" (the malloc raised), "skipped" (free of a failed malloc)
    allocated: int
    reserved: int
    value: int  # memory_stats()[ask] after the step
    segments: list[Segment]
    device_allocs: int  # num_device_alloc / num_device_free so far (cudaMalloc or map)
    device_frees: int


def replay(dev: TraceDevice, inputs: Mapping[str, Any]) -> tuple[list[Step], dict[str, int]]:
    """Every step's outcome and figures, and the final statistics."""
    live: dict[str, Handle] = {}
    steps: list[Step] = []
    stats: dict[str, int] = {}
    for op in inputs["ops"]:
        outcome = "ok"
        if op[0] == "malloc":
            try:
                live[op[1]] = dev.alloc(int(op[2]))
            except AllocatorOOM:
                outcome = "oom"
        elif op[0] == "free":
            handle = live.pop(op[1], None)
            if handle is None:
                outcome = "skipped"
            else:
                dev.free(handle)
        else:
            dev.empty_cache()
        stats = dev.stats()
        steps.append(
            Step(
                list(op),
                outcome,
                stat(stats, "allocated_bytes.all.current"),
                stat(stats, "reserved_bytes.all.current"),
                stat(stats, inputs["ask"]),
                segments_of(dev.snapshot()),
                stat(stats, "num_device_alloc"),
                stat(stats, "num_device_free"),
            )
        )
    live.clear()
    return steps, stats


def exact_fraction(limit: int, total: int) -> float:
    """The fraction whose ``int(fraction * total)`` is `limit` (torch computes the cap so)."""
    if limit >= total:
        return 1.0
    f = (limit + 0.5) / total
    while int(f * total) > limit:
        f = math.nextafter(f, 0.0)
    while int(f * total) < limit:
        f = math.nextafter(f, 1.0)
    return f
