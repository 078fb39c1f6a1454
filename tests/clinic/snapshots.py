"""Snapshots with a known answer, in torch's ``_dump_snapshot()`` format, recorded by the
simulator (`tests.sim.trace_factory.RecordingDevice`)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from gpu_runner.sim import MiB
from tests.sim.scenarios import q4_growing_batch
from tests.sim.trace_factory import RecordingDevice

GPU_768 = 768 * MiB


def growing_batch() -> dict[str, Any]:
    """Spec Q4 on a 768 MiB GPU: batches of 8..16 whose activations never fit the holes
    the previous batch left. The default allocator runs out of memory once (batch 16,
    layer 14); expandable segments do not."""
    dev = RecordingDevice(GPU_768)
    assert q4_growing_batch(dev, None)["num_ooms"] == 1
    return dev.dump()


def bigger_than_the_gpu() -> dict[str, Any]:
    """Ten 100 MiB tensors alive at once: 1000 MiB of tensors, whatever the allocator."""
    dev = RecordingDevice(4096 * MiB)
    handles = [dev.malloc(100 * MiB) for _ in range(10)]
    for h in handles:
        dev.free(h)
    return dev.dump()


def well_packed(repeats: int = 20) -> dict[str, Any]:
    """The same 64 MiB tensors over and over: the cache reuses them exactly."""
    dev = RecordingDevice(4096 * MiB)
    for _ in range(repeats):
        handles = [dev.malloc(64 * MiB) for _ in range(4)]
        for h in handles:
            dev.free(h)
    return dev.dump()


def two_devices() -> dict[str, Any]:
    """Device 0 barely used, device 1 running the growing batch: device 1 is replayed."""
    quiet = RecordingDevice(GPU_768)
    quiet.free(quiet.malloc(8 * MiB))
    busy = growing_batch()
    return {**busy, "device_traces": [quiet.events, busy["device_traces"][0]]}


def write(path: Path, snapshot: object) -> Path:
    path.write_bytes(pickle.dumps(snapshot))
    return path


def repeated_by_reference(
    devices: int = 6000, events: int = 20_000, alloc_last: bool = False
) -> bytes:
    """The red team's file: one list of ``events`` events as the trace of every device
    (memo references: 0.6 MB describing ``devices * events`` events). With ``alloc_last``
    the shared list frees only and the last device alone allocates, so a check that looks
    for an allocation walks every repetition before finding one."""
    shared: list[dict[str, Any]] = [
        {
            "action": "free_completed" if alloc_last else ("alloc", "free_completed")[i % 2],
            "addr": 512 * (i // 2),
            "size": 512,
            "stream": 0,
            "time_us": i,
            "frames": [],
        }
        for i in range(events)
    ]
    traces: list[list[dict[str, Any]]] = [shared] * devices
    if alloc_last:
        traces[-1] = [{"action": "alloc", "addr": 0, "size": 512, "stream": 0, "frames": []}]
    return pickle.dumps({"segments": [], "device_traces": traces})
