"""Run one scenario of `tests.sim.scenarios` on CUDA through torch; print its figures.

    PYTORCH_CUDA_ALLOC_CONF=... python -m tests.sim.torch_scenarios NAME [SNAPSHOT.pickle]

Used by the GPU parity test, one fresh process per scenario (torch reads the allocator
settings once, at CUDA initialisation). The last stdout line is a JSON object:
``{"total_memory": ..., "figures": ..., "peaks": ...}``. With a second argument the run
is recorded with ``_record_memory_history`` and dumped there.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import torch

from tests.sim.scenarios import SCENARIOS, cap_fraction


class TorchDevice:
    """CUDA through torch behind the `Device` protocol (uint8 tensors, no kernels)."""

    def __init__(self) -> None:
        torch.cuda.init()
        self.total_memory = torch.cuda.get_device_properties(0).total_memory
        self._live: dict[int, torch.Tensor] = {}
        self._next = 0

    def malloc(self, nbytes: int) -> int:
        self._next += 1
        self._live[self._next] = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        return self._next

    def free(self, handle: int) -> None:
        del self._live[handle]  # the last reference: the block goes back to the cache

    def empty_cache(self) -> None:
        torch.cuda.empty_cache()

    def cap(self, nbytes: int) -> None:
        torch.cuda.set_per_process_memory_fraction(cap_fraction(nbytes, self.total_memory))

    def stats(self) -> dict[str, int]:
        return dict(torch.cuda.memory_stats())

    def snapshot(self) -> list[dict[str, Any]]:
        return list(torch.cuda.memory_snapshot())

    def mem_free(self) -> int:
        return int(torch.cuda.mem_get_info()[0])

    def is_oom(self, exc: BaseException) -> bool:
        return isinstance(exc, torch.cuda.OutOfMemoryError)


def main() -> None:
    func, _conf = SCENARIOS[sys.argv[1]]
    dump = sys.argv[2] if len(sys.argv) > 2 else None
    dev = TorchDevice()
    if dump:
        torch.cuda.memory._record_memory_history(max_entries=1_000_000)
    figures = func(dev)
    if dump:
        torch.cuda.memory._dump_snapshot(dump)
        torch.cuda.memory._record_memory_history(enabled=None)
    peaks = {
        "peak_reserved": torch.cuda.max_memory_reserved(),
        "peak_allocated": torch.cuda.max_memory_allocated(),
    }
    print(json.dumps({"total_memory": dev.total_memory, "figures": figures, "peaks": peaks}))


if __name__ == "__main__":
    main()
