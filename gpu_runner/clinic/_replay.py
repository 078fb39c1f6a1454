"""One configuration's replay of a `TraceProgram`: figures, timeline and OOM points."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from gpu_runner.clinic._program import TraceProgram
from gpu_runner.sim import AllocatorConfig, Block, CachingAllocator, OutOfMemoryError
from gpu_runner.sim.replay import fragmentation

MAX_OOM_POINTS = 200  # markers on the plot; the count is exact


@dataclass(frozen=True, slots=True)
class ConfigRun:
    """What the allocator did with the trace under one configuration."""

    conf: str
    peak_allocated: int
    peak_reserved: int
    unallocated_at_peak: int  # reserved - allocated when reserved peaked
    fragmentation_at_peak: float  # 1 - largest free block / free cached bytes, then
    ooms: int
    alloc_retries: int
    allocated: list[int]  # per timeline point: the most allocated in its ops
    reserved: list[int]  # per timeline point: the most reserved in its ops
    oom_ops: list[int]  # op index of the first OOMs

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ConfigRun:
        return cls(**data)


def replay_program(program: TraceProgram, config: AllocatorConfig, total_memory: int) -> ConfigRun:
    """Run `program` through a fresh simulated allocator of `total_memory` bytes."""
    alloc = CachingAllocator(total_memory, conf=config)
    small, large = alloc.small_pool, alloc.large_pool
    malloc, free = alloc.malloc, alloc.free
    handles: list[Block | None] = [None] * program.allocs
    slots, sizes, streams = program.slots, program.sizes, program.streams
    peak_reserved = -1
    unallocated = 0
    frag = 0.0
    oom_ops: list[int] = []
    ooms = 0
    t_alloc: list[int] = []
    t_reserved: list[int] = []
    bucket = program.bucket
    for start in range(0, len(slots), bucket):
        end = start + bucket
        # a point's maxima start from the values it inherits: frees never raise them
        top_a = small.b_cur + large.b_cur
        top_r = small.r_cur + large.r_cur
        op = start
        for slot, size, stream in zip(
            slots[start:end], sizes[start:end], streams[start:end], strict=True
        ):
            if slot >= 0:
                try:
                    handles[slot] = malloc(size, stream)
                except OutOfMemoryError:
                    ooms += 1
                    if len(oom_ops) < MAX_OOM_POINTS:
                        oom_ops.append(op)
                # reserved and allocated only grow in malloc: their maxima are taken here
                reserved = small.r_cur + large.r_cur
                allocated = small.b_cur + large.b_cur
                if allocated > top_a:
                    top_a = allocated
                if reserved > top_r:
                    top_r = reserved
                    if reserved > peak_reserved:
                        peak_reserved = reserved
                        unallocated = reserved - allocated
                        frag = fragmentation(alloc, unallocated)
            else:
                block = handles[~slot]
                if block is not None:  # None: its malloc failed (OOM)
                    free(block)
                    handles[~slot] = None
            op += 1
        t_alloc.append(top_a)
        t_reserved.append(top_r)
    return ConfigRun(
        conf=config.text,
        peak_allocated=alloc.max_memory_allocated(),
        peak_reserved=alloc.max_memory_reserved(),
        unallocated_at_peak=unallocated,
        fragmentation_at_peak=frag,
        ooms=ooms,
        alloc_retries=alloc.memory_stats()["num_alloc_retries"],
        allocated=t_alloc,
        reserved=t_reserved,
        oom_ops=oom_ops,
    )
