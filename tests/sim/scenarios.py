"""The spec's allocator scenarios (spec 3), written once for any device.

Each scenario drives a `Device` (the simulator here, CUDA through torch in
``torch_scenarios.py``) and returns only rule-determined figures, so the GPU parity test
can compare the two results for equality.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

from gpu_runner.sim import MiB
from gpu_runner.sim.recording import RecordingDevice

Figures = dict[str, Any]

# the fields of torch's OOM message that the rules determine (capacity/free are the GPU's)
_OOM_FIELDS = {
    "tried": r"Tried to allocate ([\d.]+ \w+)\.",
    "allowed": r"([\d.]+ \w+) allowed;",
    "allocated": r"Of the allocated memory ([\d.]+ \w+) is allocated by PyTorch",
    "unallocated": r"and ([\d.]+ \w+) is reserved by PyTorch but unallocated",
}


def oom_fields(message: str) -> dict[str, str | None]:
    found = {}
    for name, pattern in _OOM_FIELDS.items():
        match = re.search(pattern, message)
        found[name] = match.group(1) if match else None
    return found


class Device(Protocol):
    total_memory: int

    def malloc(self, nbytes: int) -> int: ...
    def free(self, handle: int) -> None: ...
    def empty_cache(self) -> None: ...
    def cap(self, nbytes: int) -> None: ...
    def stats(self) -> dict[str, int]: ...
    def snapshot(self) -> list[dict[str, Any]]: ...
    def mem_free(self) -> int: ...
    def is_oom(self, exc: BaseException) -> bool: ...


class SimDevice(RecordingDevice):
    """The simulator behind the `Device` protocol, recording no trace events. Handles are
    ints, like for torch; the cap's fraction formats its ``allowed`` as asked (spec 1.9)."""

    def malloc(self, nbytes: int) -> int:
        self._next += 1
        self._live[self._next] = self.alloc.malloc(nbytes)
        return self._next

    def free(self, handle: int) -> None:
        self.alloc.free(self._live.pop(handle))

    def empty_cache(self) -> None:
        self.alloc.empty_cache()


_KEYS = (
    "allocated_bytes.all.current",
    "reserved_bytes.all.current",
    "inactive_split_bytes.all.current",
    "inactive_split.all.current",
    "segment.all.current",
    "num_alloc_retries",
    "num_ooms",
)


def _core(dev: Device) -> Figures:
    stats = dev.stats()
    return {key: stats.get(key, 0) for key in _KEYS}


def _blocks(dev: Device) -> list[list[tuple[int, str]]]:
    return [[(b["size"], b["state"]) for b in seg["blocks"]] for seg in dev.snapshot()]


def s11_reuse(dev: Device) -> Figures:
    """8 x 16 MiB allocated and freed, then 4 x 32 MiB (S11)."""
    first = [dev.malloc(16 * MiB) for _ in range(8)]
    before = dev.stats()["reserved_bytes.all.current"]
    for h in first:
        dev.free(h)
    second = [dev.malloc(32 * MiB) for _ in range(4)]
    out = {"reserved_after_16s": before, **_core(dev)}
    for h in second:
        dev.free(h)
    return out


Q8_REQUESTS = (1, 1000, MiB + 1, 5 * MiB, 100 * MiB + 1, 512 * MiB)


def q8_reserved_vs_allocated(dev: Device) -> Figures:
    rows = []
    handles = []
    for n in Q8_REQUESTS:
        handles.append(dev.malloc(n))
        s = dev.stats()
        rows.append(
            [
                s["requested_bytes.all.current"],
                s["allocated_bytes.all.current"],
                s["reserved_bytes.all.current"],
                s["inactive_split_bytes.all.current"],
            ]
        )
    for h in handles:
        dev.free(h)
    after_free = _core(dev)
    dev.empty_cache()
    return {"rows": rows, "after_free": after_free, "after_empty_cache": _core(dev)}


def _fragmented_800(dev: Device) -> list[int]:
    """Q1's layout: one 800 MiB segment, 16 x 50 MiB, even ones freed. Returns the odd."""
    big = dev.malloc(800 * MiB)
    dev.free(big)
    blocks = [dev.malloc(50 * MiB) for _ in range(16)]
    for h in blocks[0::2]:
        dev.free(h)
    return blocks[1::2]


def fragmentation_of(dev: Device) -> Figures:
    free_sizes = [
        b["size"] for seg in dev.snapshot() for b in seg["blocks"] if b["state"] == "inactive"
    ]
    total = sum(free_sizes)
    largest = max(free_sizes, default=0)
    return {
        "free_blocks": len(free_sizes),
        "total_free": total,
        "largest_free": largest,
        "index": round(1 - largest / total, 6) if total else 0.0,
    }


def q1_fragmentation(dev: Device) -> Figures:
    odd = _fragmented_800(dev)
    out = {**_core(dev), **fragmentation_of(dev), "blocks": _blocks(dev)}
    for h in odd:
        dev.free(h)
    return out


def q3_oom_despite_reserved(dev: Device) -> Figures:
    dev.cap(1024 * MiB)
    odd = _fragmented_800(dev)
    out: Figures = {"layout": _core(dev)}
    try:
        h = dev.malloc(300 * MiB)
    except Exception as exc:
        if not dev.is_oom(exc):
            raise
        out["oom"] = oom_fields(str(exc))
    else:
        out["oom"] = None
        out["after_success"] = _core(dev)
        dev.free(h)
        return out
    out["after_oom"] = _core(dev)
    dev.empty_cache()  # the odd blocks pin the segment
    out["after_empty_cache_pinned"] = _core(dev)
    for h in odd:
        dev.free(h)
    out["after_unpin"] = {**_core(dev), "blocks": _blocks(dev)}
    h = dev.malloc(300 * MiB)
    out["retry"] = {**_core(dev), "blocks": _blocks(dev)}
    dev.empty_cache()
    out["empty_cache_with_live"] = _core(dev)
    dev.free(h)
    return out


def q3_expandable(dev: Device) -> Figures:
    """Q3's request under expandable segments: succeeds after unmapping free pages."""
    dev.cap(1024 * MiB)
    odd = _fragmented_800(dev)
    h = dev.malloc(300 * MiB)
    stats = dev.stats()
    out = {**_core(dev), "num_device_free": stats["num_device_free"]}
    dev.free(h)
    for h in odd:
        dev.free(h)
    return out


def q4_growing_batch(dev: Device, cap: int | None) -> Figures:
    """Batches n = 8..16 of 16 layers: a kept activation and a freed temporary each."""
    if cap is not None:
        dev.cap(cap)
    ooms = []
    for n in range(8, 17):
        acts = []
        layer = 0  # 1-based layer being run
        try:
            while layer < 16:
                layer += 1
                acts.append(dev.malloc(n * 2 * MiB + 4096))
                tmp = dev.malloc(3 * n * 2 * MiB + 4096)
                dev.free(tmp)
        except Exception as exc:
            if not dev.is_oom(exc):
                raise
            ooms.append([n, layer, oom_fields(str(exc))["tried"]])
        for h in acts:
            dev.free(h)
    s = dev.stats()
    return {
        "ooms": ooms,
        "num_ooms": s["num_ooms"],
        "num_alloc_retries": s["num_alloc_retries"],
        "peak_reserved": s["reserved_bytes.all.peak"],
        "peak_allocated": s["allocated_bytes.all.peak"],
    }


def q7_empty_cache_live(dev: Device) -> Figures:
    free0 = dev.mem_free()
    x = dev.malloc(1024 * MiB)  # the view v = x[:16] keeps this block alive
    dev.empty_cache()
    held = {**_core(dev), "free_delta": dev.mem_free() - free0}
    dev.free(x)  # del v
    freed = {**_core(dev), "free_delta": dev.mem_free() - free0}
    dev.empty_cache()
    released = {**_core(dev), "free_delta": dev.mem_free() - free0}
    a = dev.malloc(4 * MiB)
    b = dev.malloc(4 * MiB)
    dev.free(a)
    dev.empty_cache()
    one_live = _core(dev)
    dev.free(b)
    dev.empty_cache()
    return {
        "held": held,
        "freed": freed,
        "released": released,
        "one_live": one_live,
        "none_live": _core(dev),
    }


# name -> (function, PYTORCH_CUDA_ALLOC_CONF); the GPU test runs each in its own process
SCENARIOS: dict[str, tuple[Callable[[Device], Figures], str]] = {
    "s11_native": (s11_reuse, ""),
    "s11_expandable": (s11_reuse, "expandable_segments:True"),
    "q8": (q8_reserved_vs_allocated, ""),
    "q1": (q1_fragmentation, ""),
    "q3": (q3_oom_despite_reserved, ""),
    "q3_expandable": (q3_expandable, "expandable_segments:True"),
    "q4_native_capped": (lambda d: q4_growing_batch(d, 768 * MiB), ""),
    "q4_expandable_capped": (lambda d: q4_growing_batch(d, 768 * MiB), "expandable_segments:True"),
    "q4_native": (lambda d: q4_growing_batch(d, None), ""),
    "q4_expandable": (lambda d: q4_growing_batch(d, None), "expandable_segments:True"),
    "q7": (q7_empty_cache_live, ""),
}
