"""Which PyTorch the simulator follows, and whether its figures were checked on a GPU.

The one place to record a GPU check: after `scripts/gpu_check.sh` passes on a CUDA
machine, set `GPU_CHECK` here and the "GPU check" line of `docs/runner.md` to match (a
test keeps the two equal). Every simulated demo report and plot words its note from it.
"""

from __future__ import annotations

from dataclasses import dataclass

# The torch release whose CUDACachingAllocator rules the simulator implements
# (shared/docs/allocator-spec.md §1, "in their torch 2.13 form"); the runner image uses it too.
RULES_TORCH = "2.13"


@dataclass(frozen=True, slots=True)
class GpuCheck:
    """A run of the simulator-vs-CUDA comparison that passed."""

    gpu: str  # "NVIDIA H200"
    torch: str  # "2.13.0"
    date: str  # ISO date of the run


GPU_CHECK: GpuCheck | None = None  # not yet checked on a GPU


def gpu_check_record(check: GpuCheck | None = GPU_CHECK) -> str:
    """The record as docs/runner.md states it: "none yet", or
    "NVIDIA H200 · torch 2.13.0 · 2027-01-10"."""
    return "none yet" if check is None else f"{check.gpu} · torch {check.torch} · {check.date}"
