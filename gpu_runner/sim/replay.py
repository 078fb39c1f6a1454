"""Replaying a recorded allocation trace through the simulator.

Only ``alloc`` and ``free_requested`` events drive the simulator (a free completes at
once; ``free_completed`` frees a block only if no ``free_requested`` was recorded for it).
The recorded run's ``segment_*`` and ``oom`` events are kept aside to report what the
real allocator did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpu_runner.sim._allocator import CachingAllocator
from gpu_runner.sim._config import AllocatorConfig, parse_conf
from gpu_runner.sim._errors import OutOfMemoryError
from gpu_runner.sim._state import Block
from gpu_runner.sim._trace import (
    ALLOC,
    FREE_COMPLETED,
    FREE_REQUESTED,
    OOM,
    SEGMENT_GROW,
    SEGMENT_SHRINK,
    Event,
    Snapshot,
    load_snapshot,
)
from gpu_runner.sim._unpickle import MAX_SNAPSHOT_BYTES


@dataclass(frozen=True, slots=True)
class Timeline:
    """Allocated and reserved bytes over the trace, at most `max_points` buckets (maxima)."""

    x: list[float]  # seconds since the first event, or the event index without timestamps
    allocated: list[int]
    reserved: list[int]
    x_is_time: bool


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """What one configuration did with a trace."""

    label: str
    conf: str
    total_memory: int
    allocs: int
    frees: int
    peak_allocated: int
    peak_reserved: int
    fragmentation_at_peak: float  # 1 - largest free block / free cached bytes at peak reserved
    unallocated_at_peak: int  # reserved - allocated at peak reserved
    num_ooms: int
    num_alloc_retries: int
    final_allocated: int
    final_reserved: int
    unknown_frees: int  # frees of blocks allocated before recording started (or failed)
    timeline: Timeline = field(repr=False)


@dataclass(frozen=True, slots=True)
class RecordedFigures:
    """What the recorded run's own allocator did, from its segment and oom events."""

    peak_reserved: int | None  # None when the snapshot holds no segment list
    num_ooms: int


def timeline_index(times: Sequence[int], max_points: int) -> tuple[int, list[float], bool]:
    """A timeline of at most `max_points` points over ops with these `times` (µs, one per
    op): the ops per point, each point's x and whether x is time. x is the seconds since
    the first op when every point's first op has a time (>= 0), else the op index."""
    bucket = max(1, -(-len(times) // max_points))
    starts = times[::bucket]
    if starts and all(t >= 0 for t in starts):
        return bucket, [(t - starts[0]) / 1e6 for t in starts], True
    return bucket, [float(i) for i in range(0, len(times), bucket)], False


def fragmentation(alloc: CachingAllocator, unallocated: int) -> float:
    """1 - largest free block / the `unallocated` cached bytes (reserved - allocated), or
    0.0 when nothing cached is unallocated."""
    return 1.0 - alloc.largest_free_block() / unallocated if unallocated else 0.0


def replay_events(
    events: Sequence[Event],
    *,
    total_memory: int,
    conf: str | AllocatorConfig = "",
    label: str = "",
    max_points: int = 2000,
) -> ReplayResult:
    """Run `events` (see `_trace.Event`) through a fresh `CachingAllocator`."""
    config = conf if isinstance(conf, AllocatorConfig) else parse_conf(conf)
    alloc = CachingAllocator(total_memory, conf=config)
    small, large = alloc.small_pool, alloc.large_pool
    live: dict[int, Block] = {}
    requested_free: set[int] = set()
    allocs = frees = unknown = 0
    peak_reserved = -1
    frag = 0.0
    unallocated = 0
    bucket, xs, x_is_time = timeline_index([e[4] for e in events], max_points)
    t_alloc: list[int] = []
    t_reserved: list[int] = []
    top_alloc = top_reserved = 0
    malloc, free = alloc.malloc, alloc.free
    for n, (code, addr, size, stream, _time) in enumerate(events):
        if code == ALLOC:
            allocs += 1
            old = live.pop(addr, None)
            if old is not None:  # the recorded allocator reused an address we think is live
                free(old)
            try:  # noqa: SIM105 (contextlib.suppress costs an object per event)
                live[addr] = malloc(size, stream)
            except OutOfMemoryError:
                pass
            reserved = small.r_cur + large.r_cur
            if reserved > peak_reserved:
                peak_reserved = reserved
                unallocated = reserved - small.b_cur - large.b_cur
                frag = fragmentation(alloc, unallocated)
        elif code == FREE_REQUESTED or (code == FREE_COMPLETED and addr not in requested_free):
            block = live.pop(addr, None)
            if block is None:
                unknown += code == FREE_REQUESTED
            else:
                free(block)
                frees += 1
                if code == FREE_REQUESTED:
                    requested_free.add(addr)
        elif code == FREE_COMPLETED:
            requested_free.discard(addr)
        a = small.b_cur + large.b_cur
        r = small.r_cur + large.r_cur
        if a > top_alloc:
            top_alloc = a
        if r > top_reserved:
            top_reserved = r
        if n % bucket == bucket - 1 or n == len(events) - 1:
            t_alloc.append(top_alloc)
            t_reserved.append(top_reserved)
            top_alloc = top_reserved = 0
    stats = alloc.memory_stats()
    return ReplayResult(
        label=label,
        conf=config.text,
        total_memory=total_memory,
        allocs=allocs,
        frees=frees,
        peak_allocated=stats["allocated_bytes.all.peak"],
        peak_reserved=stats["reserved_bytes.all.peak"],
        fragmentation_at_peak=frag,
        unallocated_at_peak=unallocated,
        num_ooms=stats["num_ooms"],
        num_alloc_retries=stats["num_alloc_retries"],
        final_allocated=alloc.memory_allocated(),
        final_reserved=alloc.memory_reserved(),
        unknown_frees=unknown,
        timeline=Timeline(xs[: len(t_alloc)], t_alloc, t_reserved, x_is_time),
    )


def recorded_figures(snapshot: Snapshot, device: int) -> RecordedFigures:
    """Peak reserved and OOMs of the recorded run, from its own segment events."""
    events = snapshot.traces[device]
    net = peak = 0
    ooms = 0
    for code, _addr, size, _stream, _time in events:
        if code == SEGMENT_GROW:
            net += size
            peak = max(peak, net)
        elif code == SEGMENT_SHRINK:
            net -= size
        elif code == OOM:
            ooms += 1
    # the recording may start with segments already reserved: the final segment list
    # tells how many (final = start + net)
    start = snapshot.final_reserved[device] - net
    return RecordedFigures(peak_reserved=max(start, 0) + peak, num_ooms=ooms)


def replay_file(
    path: str | Path,
    *,
    total_memory: int,
    conf: str | None = None,
    device: int | None = None,
    max_bytes: int = MAX_SNAPSHOT_BYTES,
) -> tuple[Snapshot, int, ReplayResult, ReplayResult]:
    """Replay a snapshot file (at most `max_bytes`) with its recorded settings and with
    `conf` (default: defaults).

    Returns the snapshot, the device replayed, and the two results (recorded, asked).
    """
    snapshot = load_snapshot(path, max_bytes)
    asked = parse_conf(conf or "")
    dev = snapshot.busiest_device() if device is None else device
    if not 0 <= dev < len(snapshot.traces):
        raise ValueError(
            f"device {dev} is not in the snapshot: it has traces for devices "
            f"0..{len(snapshot.traces) - 1}"
        )
    events = snapshot.traces[dev]
    recorded = replay_events(
        events,
        total_memory=total_memory,
        conf=snapshot.settings,
        label=f"recorded ({snapshot.settings.text or 'defaults'})",
    )
    result = replay_events(
        events, total_memory=total_memory, conf=asked, label=f"asked ({asked.text or 'defaults'})"
    )
    return snapshot, dev, recorded, result
