"""One allocation script, two devices: the real CUDA caching allocator or the simulator.

Allocator demos are written once against `Device`. On a GPU it wraps torch
(``torch.empty(n, dtype=torch.uint8, device="cuda")`` gives exact byte control and launches
no kernel); without CUDA it wraps `gpu_runner.sim.CachingAllocator`. Rule-determined
figures (bytes, counts, OOM or not) must come out identical on both.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Protocol

from gpu_runner.demos._context import SIMULATED_DEVICE, RunContext
from gpu_runner.demos._labels import SIM_TOTAL_MEMORY, RunKind, RunLabel

# The spec's fractions add 4096 B so int(fraction * total) never rounds below the cap.
CAP_SLACK = 4096


class AllocatorOOM(Exception):
    """An allocation failed: torch's OutOfMemoryError or the simulator's, same text."""


@dataclass(eq=False, slots=True)
class Handle:
    """A live tensor (or view) the script holds; freeing it drops that reference."""

    nbytes: int
    obj: Any  # torch tensor, or the simulator's Block
    base: Handle | None = None  # views point at their base
    refs: int = 1


class Device(Protocol):
    simulated: bool
    total_memory: int

    def alloc(self, nbytes: int) -> Handle: ...
    def view(self, handle: Handle) -> Handle: ...
    def free(self, handle: Handle) -> None: ...
    def empty_cache(self) -> None: ...
    def stats(self) -> dict[str, int]: ...
    def snapshot(self) -> list[dict[str, Any]]: ...
    def allocated(self) -> int: ...
    def reserved(self) -> int: ...
    def mem_free(self) -> int | None: ...
    def cap(self, nbytes: int | None) -> None: ...
    def summary(self) -> str: ...
    def restart(self, conf: str) -> None: ...
    def device_line(self) -> str: ...


def open_device(ctx: RunContext, conf: str = "") -> Device:
    """The CUDA allocator when the child has CUDA, else the simulator."""
    if ctx.cuda:
        return CudaDevice(ctx, conf)
    return SimDevice(conf)


class SimDevice:
    simulated = True

    def __init__(self, conf: str = "", total_memory: int = SIM_TOTAL_MEMORY) -> None:
        self.total_memory = total_memory
        self.restart(conf)

    def restart(self, conf: str) -> None:
        """A fresh allocator with `conf` (a new process on a GPU)."""
        from gpu_runner.sim import CachingAllocator

        self._a = CachingAllocator(self.total_memory, conf=conf)

    def alloc(self, nbytes: int) -> Handle:
        from gpu_runner.sim import OutOfMemoryError

        try:
            return Handle(nbytes, self._a.malloc(nbytes))
        except OutOfMemoryError as exc:
            raise AllocatorOOM(str(exc)) from None

    def view(self, handle: Handle) -> Handle:
        base = handle.base or handle
        base.refs += 1
        return Handle(0, None, base=base)

    def free(self, handle: Handle) -> None:
        base = handle.base or handle
        base.refs -= 1
        if base.refs == 0:
            self._a.free(base.obj)

    def empty_cache(self) -> None:
        self._a.empty_cache()

    def stats(self) -> dict[str, int]:
        return dict(self._a.memory_stats())

    def snapshot(self) -> list[dict[str, Any]]:
        return [dict(s) for s in self._a.memory_snapshot()]

    def allocated(self) -> int:
        return self._a.memory_allocated()

    def reserved(self) -> int:
        return self._a.memory_reserved()

    def mem_free(self) -> int | None:
        return self._a.mem_get_info()[0]

    def cap(self, nbytes: int | None) -> None:
        fraction = 1.0 if nbytes is None else (nbytes + CAP_SLACK) / self.total_memory
        self._a.set_per_process_memory_fraction(min(1.0, fraction))

    def summary(self) -> str:
        return self._a.memory_summary()

    def device_line(self) -> str:
        return SIMULATED_DEVICE


class CudaDevice:
    simulated = False

    def __init__(self, ctx: RunContext, conf: str = "") -> None:
        self._ctx = ctx
        self._t = ctx.require_torch()
        self.total_memory = int(self._t.cuda.get_device_properties(0).total_memory)
        if conf:
            set_allocator_settings(self._t, conf)
        self.cap(None)

    def restart(self, conf: str) -> None:
        """The closest a running process gets to a fresh one: nothing live, caches
        released, settings re-applied, counters reset."""
        t = self._t
        if t.cuda.memory_allocated():
            raise RuntimeError("restart() needs every tensor of the previous run freed")
        t.cuda.synchronize()
        t.cuda.empty_cache()
        set_allocator_settings(t, conf or "expandable_segments:False")
        t.cuda.reset_peak_memory_stats()
        t.cuda.reset_accumulated_memory_stats()

    def alloc(self, nbytes: int) -> Handle:
        t = self._t
        try:
            return Handle(nbytes, t.empty(nbytes, dtype=t.uint8, device="cuda"))
        except t.cuda.OutOfMemoryError as exc:
            raise AllocatorOOM(str(exc)) from None

    def view(self, handle: Handle) -> Handle:
        return Handle(0, handle.obj[:16], base=handle.base or handle)

    def free(self, handle: Handle) -> None:
        # Dropping the last Python reference returns the block to the cache at once.
        handle.obj = None

    def empty_cache(self) -> None:
        self._t.cuda.synchronize()
        self._t.cuda.empty_cache()

    def stats(self) -> dict[str, int]:
        return {k: int(v) for k, v in self._t.cuda.memory_stats().items()}

    def snapshot(self) -> list[dict[str, Any]]:
        return [dict(s) for s in self._t.cuda.memory_snapshot()]

    def allocated(self) -> int:
        return int(self._t.cuda.memory_allocated())

    def reserved(self) -> int:
        return int(self._t.cuda.memory_reserved())

    def mem_free(self) -> int | None:
        return int(self._t.cuda.mem_get_info()[0])

    def cap(self, nbytes: int | None) -> None:
        """Cap reserved memory; never above the executor's GPU memory cap."""
        limit = self._ctx.gpu_cap
        if nbytes is not None:
            limit = nbytes if limit is None else min(limit, nbytes)
        fraction = 1.0 if limit is None else (limit + CAP_SLACK) / self.total_memory
        self._t.cuda.set_per_process_memory_fraction(min(1.0, fraction))

    def summary(self) -> str:
        return str(self._t.cuda.memory_summary())

    def device_line(self) -> str:
        return self._ctx.device_line()


def device_label(ctx: RunContext, dev: Device, cpu_check: bool = False) -> RunLabel:
    """The run's label: measured on the GPU, or the simulator's (with a CPU torch check)."""
    if dev.simulated:
        return ctx.label(RunKind.SIMULATED, cpu_check=cpu_check)
    return ctx.label(RunKind.GPU)


def set_allocator_settings(torch: Any, conf: str) -> None:
    """Apply ``PYTORCH_CUDA_ALLOC_CONF``-style settings at run time (newest API first)."""
    setter = getattr(torch._C, "_accelerator_setAllocatorSettings", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the older setter is deprecated in 2.13
        if setter is not None:
            setter(conf)
        else:
            torch.cuda.memory._set_allocator_settings(conf)


def stat(stats: dict[str, int], key: str) -> int:
    """`memory_stats().get(key, 0)`: newer keys are missing on older versions."""
    return int(stats.get(key, 0))


def usage(dev: Device) -> dict[str, int]:
    """`memory_allocated()` and `memory_reserved()`, under the demos' metric names."""
    return {"allocated_bytes": dev.allocated(), "reserved_bytes": dev.reserved()}


def free_blocks(snapshot: list[dict[str, Any]]) -> list[int]:
    """Sizes of the inactive blocks in a snapshot (the holes)."""
    return [int(b["size"]) for seg in snapshot for b in seg["blocks"] if b["state"] == "inactive"]
