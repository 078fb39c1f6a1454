"""Replay a computed question's allocator trace on the simulator (`gpu_runner.sim`).

A question whose answer is what the caching allocator reports after some code keeps that
code in `inputs` (kind `allocator-steps`) as a list of operations:

- ``{alloc: BYTES, count: N, as: NAME}``: N tensors ``torch.empty(BYTES, dtype=torch.uint8)``
  named ``NAME[0..N-1]`` (count defaults to 1);
- ``{free: NAME, every: K}``: ``del`` the tensors ``NAME[i]`` with ``i % K == 0`` (K defaults
  to 1: all of them);
- ``{view: NAME, as: OTHER}``: ``OTHER[i]`` is a view of ``NAME[i]`` and shares its storage;
- ``{repeat: N, ops: [...]}``: the nested operations, N times.

A storage goes back to the allocator when its last name is deleted or rebound, as in
Python. `report` names the figure the question asks for (`REPORTS`), read once all
operations ran.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu_runner.sim import Block, CachingAllocator, GiB

DEVICE_MEMORY = 80 * GiB  # "nothing else on the GPU": large enough for every trace


@dataclass(slots=True)
class _Storage:
    block: Block
    names: int = 0


@dataclass(slots=True)
class _Trace:
    alloc: CachingAllocator = field(default_factory=lambda: CachingAllocator(DEVICE_MEMORY))
    names: dict[str, list[_Storage | None]] = field(default_factory=dict)

    def run(self, ops: Sequence[Mapping[str, Any]]) -> None:
        for op in ops:
            if "repeat" in op:
                for _ in range(op["repeat"]):
                    self.run(op["ops"])
            elif "alloc" in op:
                self._bind(
                    op["as"],
                    [_Storage(self.alloc.malloc(op["alloc"])) for _ in range(op.get("count", 1))],
                )
            elif "view" in op:
                self._bind(op["as"], list(self._tensors(op["view"])))
            elif "free" in op:
                self._delete(op["free"], op.get("every", 1))
            else:
                raise ValueError(
                    f"unknown trace operation {dict(op)!r}; use alloc, free, view or repeat"
                )

    def _tensors(self, name: str) -> list[_Storage | None]:
        if name not in self.names:
            raise ValueError(f"trace names no tensors {name!r}; alloc or view them first")
        return self.names[name]

    def _bind(self, name: str, storages: list[_Storage | None]) -> None:
        # As in Python, the new tensors exist before the name lets go of the old ones.
        for storage in storages:
            if storage is not None:
                storage.names += 1
        old = self.names.get(name, [])
        self.names[name] = storages
        for storage in old:
            self._release(storage)

    def _delete(self, name: str, every: int) -> None:
        tensors = self._tensors(name)
        for i, storage in enumerate(tensors):
            if i % every == 0:
                tensors[i] = None
                self._release(storage)

    def _release(self, storage: _Storage | None) -> None:
        if storage is None:
            return
        storage.names -= 1
        if storage.names == 0:
            self.alloc.free(storage.block)


def _largest_free_block(alloc: CachingAllocator) -> int:
    return max(
        (
            b["size"]
            for seg in alloc.memory_snapshot()
            for b in seg["blocks"]
            if b["state"] == "inactive"
        ),
        default=0,
    )


REPORTS: dict[str, Callable[[CachingAllocator], int]] = {
    "memory-reserved": lambda a: a.memory_reserved(),
    "memory-allocated": lambda a: a.memory_allocated(),
    "largest-free-block": _largest_free_block,
    "cudamalloc-calls": lambda a: a.memory_stats()["segment.all.allocated"],
}


def replay(inputs: Mapping[str, Any]) -> int:
    """Run the trace in `inputs` on a fresh simulated allocator; return the reported figure."""
    report = inputs["report"]
    if report not in REPORTS:
        raise ValueError(f"unknown trace report {report!r}; use one of {sorted(REPORTS)}")
    trace = _Trace()
    trace.run(inputs["ops"])
    return REPORTS[report](trace.alloc)
