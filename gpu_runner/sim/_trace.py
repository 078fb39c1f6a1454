"""Reading ``torch.cuda.memory._dump_snapshot()`` pickles safely (spec 2.4).

The file is read only up to a size limit, and unpickled by `gpu_runner.sim._unpickle`:
plain data only (a pickle that names any callable is refused before anything in it runs),
within a budget of built bytes. The result is checked against the shape torch writes and
turned into compact event tuples; values are echoed cut short (`bot.quoting`).
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bot.i18n import N_
from bot.quoting import quoted
from gpu_runner.sim._config import AllocatorConfig, parse_conf
from gpu_runner.sim._errors import AllocatorConfigError, SnapshotError
from gpu_runner.sim._sizes import SIZE_MAX, MiB
from gpu_runner.sim._unpickle import (
    MAX_SNAPSHOT_BYTES,
    BrokenPickleError,
    RefusedPickleError,
    restricted_loads,
)

# A trace entry takes at least 28 bytes of pickle (a dict of six keys); an event list
# longer than the file allows holds one entry many times over (memo references).
MIN_EVENT_BYTES = 16
# One trace per device the recording process saw: 8 on most GPU servers, 16 on the
# largest. Far more is a list repeated by reference, not a machine.
MAX_DEVICE_TRACES = 64
_VALUE_MAX = 1 << 64  # addresses, sizes and streams are 64-bit
_CONF_MAX = 4096  # characters of a recorded PYTORCH_CUDA_ALLOC_CONF worth parsing

# replay action codes
ALLOC = 0
FREE_REQUESTED = 1
FREE_COMPLETED = 2
SEGMENT_GROW = 3  # segment_alloc / segment_map
SEGMENT_SHRINK = 4  # segment_free / segment_unmap
OOM = 5
_ACTIONS = {
    "alloc": ALLOC,
    "free_requested": FREE_REQUESTED,
    "free_completed": FREE_COMPLETED,
    "segment_alloc": SEGMENT_GROW,
    "segment_map": SEGMENT_GROW,
    "segment_free": SEGMENT_SHRINK,
    "segment_unmap": SEGMENT_SHRINK,
    "oom": OOM,
}

# (action code, address, size, stream, time in microseconds or -1)
Event = tuple[int, int, int, int, int]


def max_entries(pickle_bytes: int) -> int:
    """The most trace events (or segments) a pickle of ``pickle_bytes`` can hold when each
    is its own object, as ``_dump_snapshot()`` writes them: more means entries repeated
    by reference, which cost 2 bytes each and describe what the file never held."""
    return pickle_bytes // MIN_EVENT_BYTES + 1


class RepeatedEntriesError(SnapshotError):
    """The snapshot lists more entries than its file can hold (memo references)."""

    def __init__(self, path: str, what: str, count: int, limit: int) -> None:
        super().__init__(
            f"{path} lists {count:,} {what}, more than a file of its size can hold "
            f"({limit:,}): it repeats entries by reference, which "
            "torch.cuda.memory._dump_snapshot() never writes"
        )
        self.what, self.count, self.limit = what, count, limit


class TooManyDevicesError(SnapshotError):
    """More device traces than any machine has GPUs."""

    def __init__(self, path: str, devices: int) -> None:
        super().__init__(
            f"{path} has traces for {devices:,} devices, more than a machine has "
            f"({MAX_DEVICE_TRACES} at most): it is not a snapshot torch wrote"
        )
        self.devices, self.limit = devices, MAX_DEVICE_TRACES


def check_bounds(data: Mapping[str, object], path: str, max_events: int | None) -> None:
    """Refuse a snapshot that describes more than its file holds, before any per-event
    work: more device traces than `MAX_DEVICE_TRACES`, and (given ``max_events``, see
    `max_entries`) more events in all, or more segments, than that."""
    traces = data.get("device_traces")
    if isinstance(traces, list) and len(traces) > MAX_DEVICE_TRACES:
        raise TooManyDevicesError(path, len(traces))
    if max_events is None:
        return
    if isinstance(traces, list):
        total = sum(len(raw) for raw in traces if isinstance(raw, list))
        if total > max_events:
            raise RepeatedEntriesError(path, "events", total, max_events)
    segments = data.get("segments")
    if isinstance(segments, list) and len(segments) > max_events:
        raise RepeatedEntriesError(path, "segments", len(segments), max_events)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The parts of a memory snapshot that replay needs."""

    path: str
    traces: tuple[tuple[Event, ...], ...]  # per device
    final_reserved: tuple[int, ...]  # per device, from the snapshot's segments
    settings: AllocatorConfig
    settings_note: str  # where the recorded settings came from (English msgid: N_)
    ignored_actions: int

    def busiest_device(self) -> int:
        return max(range(len(self.traces)), key=lambda d: len(self.traces[d]))


def _int(event: Mapping[str, object], key: str, where: str) -> int:
    value = event.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or abs(value) >= _VALUE_MAX:
        raise SnapshotError(f"{where}: field {key!r} must be a 64-bit integer, got {quoted(value)}")
    return value


def _finite_number(value: object) -> bool:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    return math.isfinite(value) and abs(value) < _VALUE_MAX


def _events(raw: object, device: int, path: str) -> tuple[tuple[Event, ...], int]:
    if not isinstance(raw, list):
        raise SnapshotError(f"{path}: device_traces[{device}] must be a list of events")
    out: list[Event] = []
    ignored = 0
    for n, event in enumerate(raw):
        where = f"{path}: device_traces[{device}][{n}]"
        if not isinstance(event, dict):
            raise SnapshotError(f"{where} must be a dict, got {type(event).__name__}")
        action = event.get("action")
        if not isinstance(action, str):
            raise SnapshotError(f"{where}: field 'action' must be a string, got {quoted(action)}")
        code = _ACTIONS.get(action)
        if code is None:  # "snapshot" markers and newer actions carry nothing to replay
            ignored += 1
            continue
        time_us = event.get("time_us", -1)
        if not _finite_number(time_us):
            time_us = -1
        if code == OOM:  # oom events carry device_free instead of addr
            out.append((OOM, 0, _int(event, "size", where), 0, int(time_us)))
            continue
        addr = _int(event, "addr", where)
        size = _int(event, "size", where)
        stream = _int(event, "stream", where)
        if size < 0 or addr < 0:
            raise SnapshotError(f"{where}: negative addr or size")
        out.append((code, addr, size, stream, int(time_us)))
    return tuple(out), ignored


def _final_reserved(segments: object, devices: int, path: str) -> tuple[int, ...]:
    totals = [0] * devices
    if not isinstance(segments, list):
        raise SnapshotError(f"{path}: 'segments' must be a list")
    for seg in segments:
        if not isinstance(seg, dict):
            raise SnapshotError(f"{path}: every entry of 'segments' must be a dict")
        device = seg.get("device", 0)
        size = seg.get("total_size", 0)
        if isinstance(device, int) and isinstance(size, int) and 0 <= device < devices:
            totals[device] += size
    return tuple(totals)


def _recorded_settings(raw: object) -> tuple[AllocatorConfig, str]:
    """The settings of the recorded run, from the snapshot's ``allocator_settings``."""
    if not isinstance(raw, dict):
        return parse_conf(""), N_("not recorded in the snapshot: torch defaults assumed")
    text = raw.get("PYTORCH_CUDA_ALLOC_CONF")
    if isinstance(text, str) and len(text) <= _CONF_MAX:
        try:
            return parse_conf(text), N_("PYTORCH_CUDA_ALLOC_CONF of the recorded run")
        except AllocatorConfigError:
            pass  # e.g. a key of another torch version: fall back to the parsed fields
    parts = []
    if raw.get("expandable_segments") is True:
        parts.append("expandable_segments:True")
    max_split = raw.get("max_split_size")
    if isinstance(max_split, int) and 0 < max_split < SIZE_MAX:
        parts.append(f"max_split_size_mb:{max_split // 2**20}")
    threshold = raw.get("garbage_collection_threshold")
    if isinstance(threshold, float) and 0.0 < threshold < 1.0:
        parts.append(f"garbage_collection_threshold:{threshold}")
    try:
        return parse_conf(",".join(parts)), N_("allocator_settings of the recorded run")
    except AllocatorConfigError:
        return parse_conf(""), N_("allocator_settings unreadable: torch defaults assumed")


def parse_snapshot(
    data: object, path: str = "<snapshot>", max_events: int | None = None
) -> Snapshot:
    """Check the shape of an unpickled snapshot and extract the traces (see
    `check_bounds`: at most ``max_events`` events in all, when given)."""
    if not isinstance(data, dict):
        raise SnapshotError(
            f"{path} is not a torch memory snapshot: expected a dict with 'segments' and "
            f"'device_traces', got {type(data).__name__}"
        )
    if "device_traces" not in data:
        raise SnapshotError(
            f"{path} is not a torch memory snapshot: it has no 'device_traces'. Record one "
            "with torch.cuda.memory._record_memory_history() before _dump_snapshot()"
        )
    traces_raw = data["device_traces"]
    if not isinstance(traces_raw, list):
        raise SnapshotError(f"{path}: 'device_traces' must be a list (one entry per device)")
    check_bounds(data, path, max_events)
    traces = []
    ignored = 0
    for device, raw in enumerate(traces_raw):
        events, skipped = _events(raw, device, path)
        traces.append(events)
        ignored += skipped
    if not any(traces):
        raise SnapshotError(
            f"{path} holds no allocation events: was memory history recording enabled "
            "(torch.cuda.memory._record_memory_history(max_entries=...)) while the job ran?"
        )
    settings, note = _recorded_settings(data.get("allocator_settings"))
    return Snapshot(
        path=path,
        traces=tuple(traces),
        final_reserved=_final_reserved(data.get("segments", []), len(traces), path),
        settings=settings,
        settings_note=note,
        ignored_actions=ignored,
    )


def load_snapshot(path: str | Path, max_bytes: int = MAX_SNAPSHOT_BYTES) -> Snapshot:
    """Read and check a snapshot file of at most ``max_bytes``; `SnapshotError` says what
    is wrong with it."""
    file = Path(path)
    try:
        size = file.stat().st_size
        if size > max_bytes:
            raise SnapshotError(_too_big(file, size, max_bytes))
        with file.open("rb") as f:
            data = f.read(max_bytes + 1)  # the file may have grown since the stat
    except OSError as exc:
        raise SnapshotError(f"cannot read {file}: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        raise SnapshotError(_too_big(file, len(data), max_bytes))
    try:
        obj = restricted_loads(data)
    except RefusedPickleError as exc:
        raise SnapshotError(
            f"{file} was refused: {exc}. A snapshot file may only hold plain data (dicts, "
            "lists, numbers, strings); nothing in it was executed"
        ) from exc
    except (BrokenPickleError, pickle.UnpicklingError, ValueError, EOFError) as exc:
        raise SnapshotError(
            f"{file} is corrupted or not a pickle ({type(exc).__name__}: "
            f"{quoted(str(exc), 200)[1:-1]}); write it again with "
            "torch.cuda.memory._dump_snapshot()"
        ) from exc
    except Exception as exc:  # garbage input raises many kinds of errors
        raise SnapshotError(
            f"{file} is corrupted or not a pickle ({type(exc).__name__}); write it again "
            "with torch.cuda.memory._dump_snapshot()"
        ) from exc
    return parse_snapshot(obj, str(file), max_events=max_entries(len(data)))


def _too_big(file: Path, size: int, limit: int) -> str:
    return (
        f"{file} is {size / MiB:,.1f} MiB, over the {limit / MiB:,.0f} MiB limit for a "
        "snapshot; record fewer entries (_record_memory_history(max_entries=...)) or "
        "raise the limit"
    )
