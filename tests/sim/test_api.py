"""The public surface: names exported, torch-shaped stats and snapshot dictionaries."""

from __future__ import annotations

import ast
from pathlib import Path

import gpu_runner.sim as sim
from gpu_runner.sim import CachingAllocator, GiB, MiB

_POOLED = (
    "active",
    "active_bytes",
    "allocated_bytes",
    "allocation",
    "inactive_split",
    "inactive_split_bytes",
    "requested_bytes",
    "reserved_bytes",
    "segment",
)
_FIELDS = ("allocated", "current", "freed", "peak")
ROOT = Path(__file__).resolve().parents[2]
SIM = ROOT / "gpu_runner" / "sim"


def _imported_from_sim() -> dict[str, set[str]]:
    """Names each module outside the simulator imports from `gpu_runner.sim`."""
    used: dict[str, set[str]] = {}
    for package in ("bot", "adapters", "questions", "storage", "gpu_runner", "bench"):
        for path in (ROOT / package).rglob("*.py"):
            if SIM in path.parents:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module == "gpu_runner.sim":
                    used.setdefault(str(path.relative_to(ROOT)), set()).update(
                        a.name for a in node.names
                    )
    return used


def test_the_public_surface_resolves_and_covers_what_the_other_packages_import() -> None:
    assert len(set(sim.__all__)) == len(sim.__all__)
    assert [n for n in sim.__all__ if not hasattr(sim, n)] == []
    used = _imported_from_sim()
    assert used, "the demos, the clinic and the families import the simulator"
    outside = {m: sorted(names - set(sim.__all__)) for m, names in used.items()}
    assert {m: names for m, names in outside.items() if names} == {}
    assert (sim.KiB, sim.MiB, sim.GiB) == (1024, 1024**2, 1024**3)


def test_memory_stats_has_torchs_flat_keys_in_sorted_order() -> None:
    stats = CachingAllocator(GiB).memory_stats()
    expected = {
        f"{name}.{pool}.{field}"
        for name in _POOLED
        for pool in ("all", "large_pool", "small_pool")
        for field in _FIELDS
    }
    expected |= {
        f"{name}.{field}"
        for name in ("oversize_allocations", "oversize_segments")
        for field in _FIELDS
    }
    expected |= {
        "max_split_size",
        "num_alloc_retries",
        "num_device_alloc",
        "num_device_free",
        "num_ooms",
        "num_sync_all_streams",
    }
    assert set(stats) == expected
    assert list(stats) == sorted(stats)
    assert stats["max_split_size"] == -1


def test_snapshot_segments_and_blocks_have_torchs_shape() -> None:
    alloc = CachingAllocator(GiB)
    live = alloc.malloc(5 * MiB, stream=3)
    (segment,) = alloc.memory_snapshot()
    assert segment == {
        "device": 0,
        "address": live.ptr,
        "total_size": 20 * MiB,
        "allocated_size": 5 * MiB,
        "active_size": 5 * MiB,
        "requested_size": 5 * MiB,
        "stream": 3,
        "segment_type": "large",
        "segment_pool_id": (0, 0),
        "is_expandable": False,
        "frames": [],
        "blocks": [
            {
                "address": live.ptr,
                "size": 5 * MiB,
                "requested_size": 5 * MiB,
                "state": "active_allocated",
                "frames": [],
            },
            {
                "address": live.ptr + 5 * MiB,
                "size": 15 * MiB,
                "requested_size": 0,
                "state": "inactive",
                "frames": [],
            },
        ],
    }


def test_mem_get_info_counts_cached_memory_as_used() -> None:
    alloc = CachingAllocator(GiB, context_overhead=100 * MiB)
    block = alloc.malloc(50 * MiB)
    alloc.free(block)
    assert alloc.mem_get_info() == (GiB - 150 * MiB, GiB)
    alloc.empty_cache()
    assert alloc.mem_get_info() == (GiB - 100 * MiB, GiB)


def test_block_handles_describe_themselves() -> None:
    alloc = CachingAllocator(GiB)
    block = alloc.malloc(1000)
    assert (block.size, block.requested_size, block.stream, block.allocated) == (
        1024,
        1000,
        0,
        True,
    )
    assert "allocated" in repr(block) and "size=1024" in repr(block)
