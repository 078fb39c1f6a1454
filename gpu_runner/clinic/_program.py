"""A device trace compiled once into the flat malloc/free program every replay runs.

Torch's trace logs ``alloc``, ``free_requested`` and ``free_completed`` per block, keyed
by address. Which block each free returns is decided here, once, instead of in every
configuration's replay: the program is three parallel lists, a slot number per block
(``~slot`` for its free), so a replay needs no address dictionary. The pairing follows
`gpu_runner.sim.replay.replay_events`: a free completes at once, and ``free_completed``
frees a block only when no ``free_requested`` was recorded for it. Unlike it, a request
that failed in the recorded run (an ``oom`` event) is tried again at the same point, so a
setting can show that it avoids the OOM; where it fits it is released at once, since what
the program would have done next is not in the trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpu_runner.sim._trace import ALLOC, FREE_COMPLETED, FREE_REQUESTED, OOM, Event
from gpu_runner.sim.replay import timeline_index

MiB = 1 << 20
SMALL_REQUEST = MiB  # requests up to this go to the small pool (after rounding)


@dataclass(frozen=True, slots=True)
class TraceProgram:
    slots: list[int]  # >= 0: malloc into this slot; < 0: free slot ~value
    sizes: list[int]  # request bytes of a malloc (0 for a free)
    streams: list[int]
    allocs: int  # number of slots (allocations, and the failed requests tried again)
    frees: int
    failed_requests: int  # the recorded run's OOMs, tried again
    unknown_frees: int  # frees of blocks allocated before recording started
    demand_peak: int  # most bytes live at once, each request rounded to 512 B
    bucket: int  # ops per timeline point
    xs: list[float]  # x of each timeline point: seconds since the first event, or op index
    x_is_time: bool
    large_requests: dict[int, int]  # request size rounded up to MiB (> 1 MiB) -> bytes asked
    largest_request: int

    def __len__(self) -> int:
        return len(self.slots)


def compile_trace(events: Sequence[Event], max_points: int = 1500) -> TraceProgram:
    """Pair the trace's allocs and frees into a `TraceProgram`."""
    slots: list[int] = []
    sizes: list[int] = []
    streams: list[int] = []
    times: list[int] = []
    live: dict[int, int] = {}  # address -> slot
    live_bytes: dict[int, int] = {}  # slot -> rounded request
    requested_free: set[int] = set()
    large: dict[int, int] = {}
    unknown = frees = failed = 0
    demand = demand_peak = 0

    def malloc(size: int, stream: int, time: int) -> int:
        nonlocal demand, demand_peak
        slot = len(live_bytes) + frees  # slots are numbered in allocation order
        rounded = max(512, (size + 511) & -512)
        live_bytes[slot] = rounded
        demand += rounded
        demand_peak = max(demand_peak, demand)
        if size > SMALL_REQUEST:
            mib = -(-size // MiB)
            large[mib] = large.get(mib, 0) + size
        slots.append(slot)
        sizes.append(size)
        streams.append(stream)
        times.append(time)
        return slot

    def free(slot: int, time: int) -> None:
        nonlocal frees, demand
        slots.append(~slot)
        sizes.append(0)
        streams.append(0)
        times.append(time)
        demand -= live_bytes.pop(slot)
        frees += 1

    for code, addr, size, stream, time in events:
        if code == ALLOC:
            old = live.pop(addr, None)
            if old is not None:  # the recorded allocator reused an address we think is live
                free(old, time)
            live[addr] = malloc(size, stream, time)
        elif code == OOM and size > 0:
            free(malloc(size, stream, time), time)
            failed += 1
        elif code == FREE_REQUESTED or (code == FREE_COMPLETED and addr not in requested_free):
            slot_or_none = live.pop(addr, None)
            if slot_or_none is None:
                unknown += code == FREE_REQUESTED
            else:
                free(slot_or_none, time)
                if code == FREE_REQUESTED:
                    requested_free.add(addr)
        elif code == FREE_COMPLETED:
            requested_free.discard(addr)
    bucket, xs, x_is_time = timeline_index(times, max_points)
    return TraceProgram(
        slots=slots,
        sizes=sizes,
        streams=streams,
        allocs=len(live_bytes) + frees,
        frees=frees,
        failed_requests=failed,
        unknown_frees=unknown,
        demand_peak=demand_peak,
        bucket=bucket,
        xs=xs,
        x_is_time=x_is_time,
        large_requests=large,
        largest_request=max((mib * MiB for mib in large), default=SMALL_REQUEST),
    )
