"""Reading ``torch.cuda.memory._dump_snapshot()`` pickles safely (spec 2.4).

The file is unpickled with an unpickler that resolves no classes except a few builtin
containers, so a pickle that names any other callable is refused before anything in it
runs. The result is checked against the shape torch writes and turned into compact
event tuples.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_runner.sim._config import AllocatorConfig, parse_conf
from gpu_runner.sim._errors import AllocatorConfigError, SnapshotError
from gpu_runner.sim._sizes import SIZE_MAX

_ALLOWED_GLOBALS = frozenset(
    {
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("builtins", "bytearray"),
        ("builtins", "complex"),
        ("collections", "OrderedDict"),
    }
)

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


class RefusedPickleError(pickle.UnpicklingError):
    """The pickle names a class or function outside the allowed builtins."""


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise RefusedPickleError(f"it refers to {module}.{name}, which is not plain data")

    def persistent_load(self, pid: Any) -> Any:
        raise RefusedPickleError("it uses persistent ids, which are not plain data")


def restricted_loads(data: bytes) -> Any:
    """Unpickle plain data only (dicts, lists, tuples, str, numbers, a few containers)."""
    return _RestrictedUnpickler(io.BytesIO(data)).load()


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The parts of a memory snapshot that replay needs."""

    path: str
    traces: tuple[tuple[Event, ...], ...]  # per device
    final_reserved: tuple[int, ...]  # per device, from the snapshot's segments
    settings: AllocatorConfig
    settings_note: str  # where the recorded settings came from
    ignored_actions: int

    def busiest_device(self) -> int:
        return max(range(len(self.traces)), key=lambda d: len(self.traces[d]))


def _int(event: Mapping[str, object], key: str, where: str) -> int:
    value = event.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise SnapshotError(f"{where}: field {key!r} must be an integer, got {value!r}")
    return value


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
            raise SnapshotError(f"{where}: field 'action' must be a string, got {action!r}")
        code = _ACTIONS.get(action)
        if code is None:  # "snapshot" markers and newer actions carry nothing to replay
            ignored += 1
            continue
        time_us = event.get("time_us", -1)
        if not isinstance(time_us, int | float) or isinstance(time_us, bool):
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
        return parse_conf(""), "not recorded in the snapshot: torch defaults assumed"
    text = raw.get("PYTORCH_CUDA_ALLOC_CONF")
    if isinstance(text, str):
        try:
            return parse_conf(text), "PYTORCH_CUDA_ALLOC_CONF of the recorded run"
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
        return parse_conf(",".join(parts)), "allocator_settings of the recorded run"
    except AllocatorConfigError:
        return parse_conf(""), "allocator_settings unreadable: torch defaults assumed"


def parse_snapshot(data: object, path: str = "<snapshot>") -> Snapshot:
    """Check the shape of an unpickled snapshot and extract the traces."""
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


def load_snapshot(path: str | Path) -> Snapshot:
    """Read and check a snapshot file; `SnapshotError` says what is wrong with it."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise SnapshotError(f"cannot read {file}: {exc.strerror or exc}") from exc
    try:
        obj = restricted_loads(data)
    except RefusedPickleError as exc:
        raise SnapshotError(
            f"{file} was refused: {exc}. A snapshot file may only hold plain data (dicts, "
            "lists, numbers, strings); nothing in it was executed"
        ) from exc
    except Exception as exc:  # truncated or garbage input raises many kinds of errors
        raise SnapshotError(
            f"{file} is corrupted or not a pickle ({type(exc).__name__}: {exc}); write it "
            "again with torch.cuda.memory._dump_snapshot()"
        ) from exc
    return parse_snapshot(obj, str(file))
