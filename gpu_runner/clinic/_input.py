"""Reading a member's snapshot file: the size cap, the restricted unpickler, the checks.

The file is read only through the simulator's restricted unpickler (plain data; a pickle
naming any class or callable is refused before anything in it runs). Each way a file can
be wrong becomes a `Rejected` with a `bot.clinic.Rejection` reason, which the bot turns
into one message in the member's locale.
"""

from __future__ import annotations

import os
import pickle
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.clinic import Rejection
from gpu_runner.sim import GiB, Snapshot, SnapshotError
from gpu_runner.sim._trace import (
    OOM,
    RepeatedEntriesError,
    TooManyDevicesError,
    check_bounds,
    max_entries,
    parse_snapshot,
)
from gpu_runner.sim._unpickle import BrokenPickleError, RefusedPickleError, restricted_loads

DEFAULT_GPU_MEMORY = 80 * GiB
_REFUSED_NAME = re.compile(r"refers to ([\w.]+)")


class Rejected(Exception):
    """The file cannot be analysed; `reason` and `detail` say why (see `bot.clinic`)."""

    def __init__(self, reason: Rejection, **detail: Any) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class GpuSource:
    GIVEN = "given"
    ESTIMATED = "estimated"  # from the recorded OOM: reserved + free at that moment
    ASSUMED = "assumed"


@dataclass(frozen=True, slots=True)
class Loaded:
    snapshot: Snapshot
    device: int  # the trace replayed: the busiest
    devices: int  # devices whose trace has events
    gpu_memory: int
    gpu_source: str


def read_snapshot(path: Path, name: str, max_bytes: int, gpu_memory: int | None) -> Loaded:
    """Read, unpickle (restricted) and check a snapshot; raises `Rejected`."""
    size = os.stat(path).st_size
    if size > max_bytes:
        raise Rejected(Rejection.TOO_LARGE, name=name, size=size, limit=max_bytes)
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:  # it grew while we looked
        raise Rejected(Rejection.TOO_LARGE, name=name, size=len(data), limit=max_bytes)
    raw = _unpickle(data, name)
    # What the file can hold, as `sim replay` bounds it: a list repeated by reference is
    # refused here, before any pass over the events it describes.
    max_events, size = max_entries(len(data)), len(data)
    del data
    traces = raw.get("device_traces") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or (traces is None and "segments" not in raw):
        what = type(raw).__name__
        raise Rejected(Rejection.NOT_SNAPSHOT, name=name, problem=f"it holds a {what}")
    _check_bounds(raw, name, max_events, size)
    if not isinstance(traces, list) or not any(_has_alloc(t) for t in traces):
        raise Rejected(Rejection.NO_HISTORY, name=name)
    try:
        snapshot = parse_snapshot(raw, name, max_events)
    except SnapshotError as exc:
        problem = str(exc).removeprefix(f"{name}: ").removeprefix(f"{name} ")
        raise Rejected(Rejection.NOT_SNAPSHOT, name=name, problem=problem) from None
    device = snapshot.busiest_device()
    devices = sum(1 for t in snapshot.traces if t)
    if gpu_memory is not None:
        return Loaded(snapshot, device, devices, gpu_memory, GpuSource.GIVEN)
    recorded_oom = any(event[0] == OOM for event in snapshot.traces[device])
    estimate = (
        estimate_device_memory(traces[device], snapshot.final_reserved[device])
        if recorded_oom
        else None
    )
    if estimate is not None:
        return Loaded(snapshot, device, devices, estimate, GpuSource.ESTIMATED)
    return Loaded(snapshot, device, devices, DEFAULT_GPU_MEMORY, GpuSource.ASSUMED)


def _unpickle(data: bytes, name: str) -> Any:
    # _dump_snapshot() writes pickle protocol 4 or 5 (torch's own pickler, 2): anything
    # without that header is not one, whatever an unpickler would make of its bytes
    protocol = len(data) >= 2 and data[0] == pickle.PROTO[0] and 2 <= data[1] <= 5
    if not protocol:
        raise Rejected(Rejection.NOT_PICKLE, name=name)
    try:
        return restricted_loads(data)
    except RefusedPickleError as exc:
        found = _REFUSED_NAME.search(str(exc))
        raise Rejected(
            Rejection.REFUSED, name=name, what=found.group(1) if found else str(exc)
        ) from None
    except BrokenPickleError as exc:
        if "truncated" in str(exc):
            raise Rejected(Rejection.TRUNCATED, name=name, size=len(data)) from None
        raise Rejected(Rejection.NOT_PICKLE, name=name) from None
    except MemoryError:
        raise Rejected(Rejection.TOO_BIG_IN_MEMORY, name=name) from None
    except SnapshotError as exc:  # the unpickler's own bounds
        raise Rejected(Rejection.NOT_SNAPSHOT, name=name, problem=str(exc)) from None
    except Exception as exc:  # garbage and truncated input raise many kinds of errors
        text = str(exc).lower()
        if isinstance(exc, EOFError) or "truncated" in text or "ran out" in text:
            raise Rejected(Rejection.TRUNCATED, name=name, size=len(data)) from None
        raise Rejected(Rejection.NOT_PICKLE, name=name) from None


def _check_bounds(raw: dict[str, Any], name: str, max_events: int, size: int) -> None:
    try:
        check_bounds(raw, name, max_events)
    except TooManyDevicesError as exc:
        raise Rejected(
            Rejection.TOO_MANY_DEVICES, name=name, devices=exc.devices, limit=exc.limit
        ) from None
    except RepeatedEntriesError as exc:
        raise Rejected(
            Rejection.REPEATED_ENTRIES,
            name=name,
            what=exc.what,
            count=exc.count,
            limit=exc.limit,
            size=size,
        ) from None


def _has_alloc(trace: object) -> bool:
    return isinstance(trace, list) and any(
        isinstance(e, dict) and e.get("action") == "alloc" for e in trace
    )


def estimate_device_memory(trace: list[Any], final_reserved: int) -> int | None:
    """What the allocator could have had when the recorded run hit an OOM: the bytes it
    held then (from the segment events) plus what the driver still reported free. The
    smallest over the trace's OOMs; None without one."""
    net = 0
    at_oom: list[tuple[int, int]] = []
    for event in trace:
        if not isinstance(event, Mapping):
            continue
        action = event.get("action")
        size = event.get("size")
        if action in ("segment_alloc", "segment_map") and isinstance(size, int):
            net += size
        elif action in ("segment_free", "segment_unmap") and isinstance(size, int):
            net -= size
        elif action == "oom":
            free = event.get("device_free")
            if isinstance(free, int) and not isinstance(free, bool) and free >= 0:
                at_oom.append((net, free))
    if not at_oom:
        return None
    start = max(0, final_reserved - net)  # segments reserved before recording began
    return min(start + held + free for held, free in at_oom)
