"""Invariants after every step of long random traces (hypothesis)."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_runner.sim import (
    Block,
    CachingAllocator,
    GiB,
    KiB,
    MiB,
    OutOfMemoryError,
    check_invariants,
)

SIZES = st.one_of(
    st.integers(1, 8 * KiB),
    st.integers(8 * KiB, 2 * MiB),
    st.integers(MiB, 12 * MiB),
    st.integers(10 * MiB, 160 * MiB),
)
OPS = st.lists(
    st.tuples(
        st.sampled_from(["malloc"] * 6 + ["free"] * 5 + ["empty_cache"]),
        SIZES,
        st.sampled_from([0, 0, 0, 7]),
        st.integers(0, 2**20),
    ),
    min_size=20,
    max_size=300,
)
CONFS = st.sampled_from(
    [
        "",
        "expandable_segments:True",
        "max_split_size_mb:64",
        "roundup_power2_divisions:[2:2,64:4,>:8]",
        "max_split_size_mb:40,garbage_collection_threshold:0.5",
        "expandable_segments:True,large_segment_size_mb:12",
        "expandable_segments:True,max_split_size_mb:80",
    ]
)
CAPS = st.one_of(st.none(), st.floats(0.2, 0.9))
RUN = settings(
    deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow], database=None
)


def _check_live_blocks(alloc: CachingAllocator, live: list[Block]) -> None:
    ordered = sorted(live, key=lambda b: b.ptr)
    for a, b in itertools.pairwise(ordered):
        assert a.ptr + a.size <= b.ptr, f"{a!r} overlaps {b!r}"
    stats = alloc.memory_stats()
    assert stats["allocated_bytes.all.current"] == sum(b.size for b in live)
    assert stats["requested_bytes.all.current"] == sum(b.requested_size for b in live)
    assert stats["allocation.all.current"] == len(live)
    assert stats["active_bytes.all.current"] == stats["allocated_bytes.all.current"]
    for name in ("allocated_bytes", "reserved_bytes", "segment", "inactive_split_bytes"):
        for field in ("current", "allocated", "freed"):
            parts = stats[f"{name}.small_pool.{field}"] + stats[f"{name}.large_pool.{field}"]
            assert stats[f"{name}.all.{field}"] == parts
        assert (
            stats[f"{name}.all.allocated"] - stats[f"{name}.all.freed"]
            == stats[f"{name}.all.current"]
        )
    snapshot = alloc.memory_snapshot()
    assert sum(s["total_size"] for s in snapshot) == stats["reserved_bytes.all.current"]
    assert sum(s["allocated_size"] for s in snapshot) == stats["allocated_bytes.all.current"]


def _check_after_empty_cache(alloc: CachingAllocator, live: list[Block]) -> None:
    for block in live:
        assert block.allocated
        assert alloc.segments.get(block.seg.ptr) is block.seg, "a live block lost its segment"
    for free in alloc.free_blocks.values():
        seg = free.seg
        if seg.expandable:  # no whole page may stay mapped under a free block
            first = -(-(free.ptr - seg.ptr) // seg.page)
            last = (free.ptr + free.size - seg.ptr) // seg.page
            assert first >= last, f"free page left mapped in {free!r}"
        else:  # only segments pinned by a live block remain
            assert free.is_split, f"entirely free segment survived: {free!r}"


def _run_checking_every_step(
    conf: str, cap: float | None, ops: list[tuple[str, int, int, int]]
) -> None:
    alloc = CachingAllocator(GiB, conf=conf)
    if cap is not None:
        alloc.set_per_process_memory_fraction(cap)
    live: list[Block] = []
    top_allocated = top_reserved = 0
    ooms = 0
    for kind, size, stream, pick in ops:
        if kind == "malloc":
            try:
                live.append(alloc.malloc(size, stream))
            except OutOfMemoryError:
                ooms += 1
        elif kind == "free" and live:
            alloc.free(live.pop(pick % len(live)))
        elif kind == "empty_cache":
            alloc.empty_cache()
            _check_after_empty_cache(alloc, live)
        check_invariants(alloc)
        _check_live_blocks(alloc, live)
        top_allocated = max(top_allocated, alloc.memory_allocated())
        top_reserved = max(top_reserved, alloc.memory_reserved())
    assert alloc.max_memory_allocated() == top_allocated
    assert alloc.max_memory_reserved() == top_reserved
    assert alloc.memory_stats()["num_ooms"] == ooms


@RUN
@given(conf=CONFS, cap=CAPS, ops=OPS)
def test_random_traces_keep_every_invariant(
    conf: str, cap: float | None, ops: list[tuple[str, int, int, int]]
) -> None:
    _run_checking_every_step(conf, cap, ops)


def _seeded_ops(seed: int, length: int) -> list[tuple[str, int, int, int]]:
    """A long trace from a seed: hypothesis shrinks the seed and the length."""
    rng = random.Random(seed)
    ops = []
    for _ in range(length):
        kind = rng.choices(["malloc", "free", "empty_cache"], weights=[10, 9, 1])[0]
        band = rng.random()
        if band < 0.5:
            size = rng.randint(1, MiB)
        elif band < 0.85:
            size = rng.randint(MiB, 12 * MiB)
        else:
            size = rng.randint(10 * MiB, 120 * MiB)
        ops.append((kind, size, rng.choice([0, 0, 0, 7]), rng.randrange(2**20)))
    return ops


@pytest.mark.slow
@settings(deadline=None, max_examples=8, database=None)
@given(conf=CONFS, cap=CAPS, seed=st.integers(0, 2**32), length=st.integers(500, 2000))
def test_long_seeded_traces_keep_every_invariant(
    conf: str, cap: float | None, seed: int, length: int
) -> None:
    _run_checking_every_step(conf, cap, _seeded_ops(seed, length))


@RUN
@given(conf=CONFS, ops=OPS)
def test_freeing_everything_leaves_whole_free_segments_that_empty_cache_releases(
    conf: str, ops: list[tuple[str, int, int, int]]
) -> None:
    alloc = CachingAllocator(4 * GiB, conf=conf)
    live: list[Block] = []
    for kind, size, stream, pick in ops:
        if kind == "free" and live:
            alloc.free(live.pop(pick % len(live)))
        elif kind == "malloc":
            live.append(alloc.malloc(size, stream))
    for block in live:
        alloc.free(block)
    # every segment merged back into one free block (one run per mapped range)
    for seg in alloc.memory_snapshot():
        assert len(seg["blocks"]) == 1
    stats = alloc.memory_stats()
    assert stats["inactive_split_bytes.all.current"] == 0
    assert stats["allocated_bytes.all.current"] == 0
    alloc.empty_cache()
    check_invariants(alloc)
    assert alloc.memory_reserved() == 0
    assert alloc.memory_snapshot() == []
    assert alloc.mem_get_info() == (4 * GiB, 4 * GiB)


@RUN
@given(conf=CONFS, ops=OPS)
def test_resets_restart_peaks_and_totals(conf: str, ops: list[tuple[str, int, int, int]]) -> None:
    alloc = CachingAllocator(4 * GiB, conf=conf)
    live: list[Block] = []
    half = len(ops) // 2
    for n, (kind, size, stream, pick) in enumerate(ops):
        if n == half:
            alloc.reset_peak_memory_stats()
            alloc.reset_accumulated_memory_stats()
            before = alloc.memory_stats()
            assert before["allocated_bytes.all.peak"] == before["allocated_bytes.all.current"]
            assert before["reserved_bytes.large_pool.allocated"] == 0
            assert before["num_alloc_retries"] == 0
        if kind == "free" and live:
            alloc.free(live.pop(pick % len(live)))
        elif kind == "malloc":
            live.append(alloc.malloc(size, stream))
    stats = alloc.memory_stats()
    if half < len(ops):
        for name in ("allocation", "allocated_bytes", "reserved_bytes", "requested_bytes"):
            for pool in ("all", "small_pool", "large_pool"):
                key = f"{name}.{pool}"
                net = stats[f"{key}.allocated"] - stats[f"{key}.freed"]
                assert net == stats[f"{key}.current"] - before[f"{key}.current"]
                assert stats[f"{key}.peak"] >= stats[f"{key}.current"]
