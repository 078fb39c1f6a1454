"""Snapshots in the ``torch.cuda.memory._dump_snapshot()`` format, written by the simulator.

`RecordingDevice` runs a workload on a `CachingAllocator` and logs the events torch's
history recorder would: ``segment_alloc``/``segment_map`` before an ``alloc`` that grew
the reservation, ``free_requested`` + ``free_completed`` per free, ``oom`` on failure. The
tests record their scenarios with it; `gpu_runner.sim.sample` records the sample snapshot
that lets the memory clinic be tried without a GPU.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from gpu_runner.sim._allocator import CachingAllocator
from gpu_runner.sim._errors import OutOfMemoryError
from gpu_runner.sim._state import Block


def _frames() -> list[dict[str, Any]]:
    return [{"filename": "train.py", "line": 42, "name": "forward"}]


class RecordingDevice:
    """A `tests.sim.scenarios.Device` that also records torch-style trace events."""

    def __init__(self, total_memory: int, conf: str = "", stream: int = 0) -> None:
        self.total_memory = total_memory
        self.conf = conf
        self.alloc = CachingAllocator(total_memory, conf=conf)
        self.stream = stream
        self.events: list[dict[str, Any]] = []
        self._live: dict[int, Block] = {}
        self._next = 0
        self._clock = 1_700_000_000_000_000

    def _event(self, action: str, addr: int, size: int) -> None:
        self._clock += 250
        self.events.append(
            {
                "action": action,
                "addr": addr,
                "size": size,
                "stream": self.stream,
                "time_us": self._clock,
                "frames": _frames(),
            }
        )

    def malloc(self, nbytes: int) -> int:
        before = self.alloc.memory_reserved()
        try:
            block = self.alloc.malloc(nbytes, self.stream)
        except OutOfMemoryError:
            self._clock += 250
            self.events.append(
                {
                    "action": "oom",
                    "device_free": self.alloc.mem_get_info()[0],
                    "size": nbytes,
                    "stream": self.stream,
                    "time_us": self._clock,
                    "frames": _frames(),
                }
            )
            raise
        grown = self.alloc.memory_reserved() - before
        if grown > 0:
            kind = "segment_map" if self.alloc.expandable else "segment_alloc"
            self._event(kind, block.seg.ptr, grown)
        elif grown < 0:
            self._event("segment_free", 0, -grown)
        self._event("alloc", block.ptr, nbytes)
        self._next += 1
        self._live[self._next] = block
        return self._next

    def free(self, handle: int) -> None:
        block = self._live.pop(handle)
        self._event("free_requested", block.ptr, block.requested_size)
        self.alloc.free(block)
        self._event("free_completed", block.ptr, block.requested_size)

    def empty_cache(self) -> None:
        before = self.alloc.memory_reserved()
        self.alloc.empty_cache()
        if before > self.alloc.memory_reserved():
            self._event("segment_free", 0, before - self.alloc.memory_reserved())

    def cap(self, nbytes: int) -> None:
        self.alloc.set_per_process_memory_fraction((nbytes + 4096) / self.total_memory)

    def stats(self) -> dict[str, int]:
        return self.alloc.memory_stats()

    def snapshot(self) -> list[dict[str, Any]]:
        return [dict(seg) for seg in self.alloc.memory_snapshot()]

    def mem_free(self) -> int:
        return self.alloc.mem_get_info()[0]

    def is_oom(self, exc: BaseException) -> bool:
        return isinstance(exc, OutOfMemoryError)

    def dump(self) -> dict[str, Any]:
        """The dict torch's ``_snapshot()`` returns, for this run."""
        config = self.alloc.config
        return {
            "segments": self.snapshot(),
            "device_traces": [self.events],
            "allocator_settings": {
                "PYTORCH_CUDA_ALLOC_CONF": self.conf,
                "max_split_size": config.max_split_size_stat,
                "garbage_collection_threshold": config.garbage_collection_threshold,
                "expandable_segments": config.expandable_segments,
                "roundup_power2_divisions": {"1": 0},
            },
            "external_annotations": [],
        }


def write_snapshot(path: Path, snapshot: object) -> Path:
    path.write_bytes(pickle.dumps(snapshot))
    return path


__all__ = ["RecordingDevice", "write_snapshot"]
