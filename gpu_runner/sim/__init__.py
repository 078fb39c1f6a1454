"""A pure-Python simulator of PyTorch's CUDA caching allocator (see docs/simulator.md).

from gpu_runner.sim import CachingAllocator, MiB, GiB
alloc = CachingAllocator(80 * GiB, conf="expandable_segments:True")
block = alloc.malloc(50 * MiB)
alloc.free(block)
"""

from gpu_runner.sim._allocator import CachingAllocator
from gpu_runner.sim._config import AllocatorConfig, parse_conf
from gpu_runner.sim._errors import (
    AllocatorConfigError,
    InvalidFreeError,
    OutOfMemoryError,
    SnapshotError,
)
from gpu_runner.sim._invariants import InvariantError, check_invariants
from gpu_runner.sim._provenance import GPU_CHECK, RULES_TORCH, GpuCheck, gpu_check_record
from gpu_runner.sim._sizes import (
    GiB,
    KiB,
    MiB,
    TiB,
    allocation_size,
    format_size,
    parse_size,
    round_size,
)
from gpu_runner.sim._snapshot import BlockInfo, SegmentInfo
from gpu_runner.sim._state import Block
from gpu_runner.sim._trace import Snapshot, load_snapshot
from gpu_runner.sim._unpickle import MAX_SNAPSHOT_BYTES
from gpu_runner.sim.replay import ReplayResult, Timeline, replay_events, replay_file

__all__ = [
    "GPU_CHECK",
    "MAX_SNAPSHOT_BYTES",
    "RULES_TORCH",
    "AllocatorConfig",
    "AllocatorConfigError",
    "Block",
    "BlockInfo",
    "CachingAllocator",
    "GiB",
    "GpuCheck",
    "InvalidFreeError",
    "InvariantError",
    "KiB",
    "MiB",
    "OutOfMemoryError",
    "ReplayResult",
    "SegmentInfo",
    "Snapshot",
    "SnapshotError",
    "TiB",
    "Timeline",
    "allocation_size",
    "check_invariants",
    "format_size",
    "gpu_check_record",
    "load_snapshot",
    "parse_conf",
    "parse_size",
    "replay_events",
    "replay_file",
    "round_size",
]
