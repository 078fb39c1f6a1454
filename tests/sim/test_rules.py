"""The allocator rules of spec section 1, one behaviour per test."""

from __future__ import annotations

import pytest

from gpu_runner.sim import (
    CachingAllocator,
    GiB,
    InvalidFreeError,
    KiB,
    MiB,
    OutOfMemoryError,
    allocation_size,
    format_size,
    parse_size,
    round_size,
)

NO_DIVISIONS = (0,) * 16


@pytest.mark.parametrize(
    ("request_size", "block"),
    [(1, 512), (511, 512), (512, 512), (513, 1024), (1000, 1024), (MiB + 1, MiB + 512)],
)
def test_requests_round_up_to_512_bytes(request_size: int, block: int) -> None:
    assert round_size(request_size, NO_DIVISIONS) == block


def test_power_of_two_divisions_round_to_the_next_division() -> None:
    four = (4,) * 16
    assert round_size(1200, four) == 1536  # 1200 <= 512 * 4: plain 512 rounding (gotcha a)
    assert round_size(3000, four) == 3072  # between 2048 and 4096 in steps of 512
    assert round_size(5 * MiB + 1, four) == 6 * MiB
    assert round_size(4 * MiB, four) == 4 * MiB  # a power of two stays
    two_above_512 = (0,) * 9 + (2,) * 7
    assert round_size(514 * MiB, two_above_512) == 768 * MiB  # issue #161139
    one = (1,) * 16
    assert round_size(514 * MiB, one) == 514 * MiB  # one division is ignored


@pytest.mark.parametrize(
    ("size", "segment"),
    [
        (512, 2 * MiB),
        (MiB, 2 * MiB),
        (MiB + 512, 20 * MiB),
        (5 * MiB, 20 * MiB),
        (10 * MiB, 10 * MiB),
        (100 * MiB + 512, 102 * MiB),
    ],
)
def test_segment_sizes(size: int, segment: int) -> None:
    assert allocation_size(size) == segment


def test_format_size_matches_torch() -> None:
    assert format_size(1024) == "1024 bytes"
    assert format_size(1025) == "1.00 KiB"
    assert format_size(MiB) == "1024.00 KiB"
    assert format_size(20 * MiB) == "20.00 MiB"
    assert format_size(GiB) == "1024.00 MiB"
    assert format_size(GiB + 4096) == "1.00 GiB"


def test_parse_size_accepts_units_and_rejects_garbage() -> None:
    assert parse_size("80GiB") == 80 * GiB
    assert parse_size("141GB") == 141 * 10**9
    assert parse_size("512 MiB") == 512 * MiB
    assert parse_size("1048576") == MiB
    with pytest.raises(ValueError, match="80 gigs"):
        parse_size("80 gigs")


def test_small_requests_share_a_2_mib_segment() -> None:
    alloc = CachingAllocator(GiB)
    a = alloc.malloc(100 * KiB)
    b = alloc.malloc(MiB)
    assert b.ptr == a.ptr + 100 * KiB
    assert alloc.memory_stats()["segment.small_pool.current"] == 1
    assert alloc.memory_reserved() == 2 * MiB


def test_a_1_mib_plus_one_request_goes_to_the_large_pool() -> None:
    alloc = CachingAllocator(GiB)
    alloc.malloc(MiB + 1)
    stats = alloc.memory_stats()
    assert stats["segment.large_pool.current"] == 1
    assert stats["reserved_bytes.large_pool.current"] == 20 * MiB


def test_best_fit_takes_the_smallest_block_then_the_lowest_address() -> None:
    alloc = CachingAllocator(GiB)
    blocks = [alloc.malloc(size) for size in (30 * MiB, 12 * MiB, 20 * MiB, 12 * MiB)]
    for block in blocks:
        alloc.free(block)
    chosen = alloc.malloc(11 * MiB)
    assert chosen.ptr == blocks[1].ptr  # 12 MiB fits better than 20 or 30; lower address wins
    assert alloc.memory_reserved() == 74 * MiB  # no new segment


def test_free_blocks_are_reused_only_on_their_stream() -> None:
    alloc = CachingAllocator(GiB)
    alloc.free(alloc.malloc(40 * MiB, stream=1))
    other = alloc.malloc(40 * MiB, stream=2)
    assert alloc.memory_reserved() == 80 * MiB
    assert other.stream == 2
    same = alloc.malloc(40 * MiB, stream=1)
    assert alloc.memory_reserved() == 80 * MiB
    assert same.stream == 1


def test_large_remainders_of_one_mib_or_less_stay_with_the_allocation() -> None:
    alloc = CachingAllocator(GiB)
    block = alloc.malloc(19 * MiB)  # 20 MiB segment, 1 MiB left: not split
    assert block.size == 20 * MiB
    assert block.requested_size == 19 * MiB
    assert alloc.memory_allocated() == 20 * MiB
    alloc.free(block)
    split = alloc.malloc(18 * MiB)  # 2 MiB left: split
    assert split.size == 18 * MiB
    assert alloc.memory_stats()["inactive_split_bytes.all.current"] == 2 * MiB


def test_small_pool_splits_down_to_512_bytes() -> None:
    alloc = CachingAllocator(GiB)
    alloc.malloc(MiB)
    second = alloc.malloc(MiB - 512)  # leaves exactly 512 bytes: still split off
    assert second.size == MiB - 512
    stats = alloc.memory_stats()
    assert stats["inactive_split_bytes.small_pool.current"] == 512
    assert stats["inactive_split.small_pool.current"] == 1


def test_free_neighbours_merge_within_a_segment_only() -> None:
    alloc = CachingAllocator(GiB)
    a = alloc.malloc(30 * MiB)
    b = alloc.malloc(30 * MiB)  # another segment, right after a's in address order
    alloc.free(a)
    alloc.free(b)
    layout = [[blk["size"] for blk in seg["blocks"]] for seg in alloc.memory_snapshot()]
    assert layout == [[30 * MiB], [30 * MiB]]
    x = alloc.malloc(12 * MiB)
    y = alloc.malloc(12 * MiB)
    alloc.free(x)
    alloc.free(y)
    assert alloc.memory_snapshot()[0]["blocks"] == [
        {
            "address": x.ptr,
            "size": 30 * MiB,
            "requested_size": 12 * MiB,
            "state": "inactive",
            "frames": [],
        }
    ]


def test_oversize_blocks_serve_only_large_requests_within_the_rounding_limit() -> None:
    alloc = CachingAllocator(4 * GiB, conf="max_split_size_mb:100")
    big = alloc.malloc(200 * MiB)
    alloc.free(big)
    small = alloc.malloc(50 * MiB)  # below max_split: may not take the oversize block
    assert alloc.memory_reserved() == 250 * MiB
    alloc.free(small)
    loose = alloc.malloc(150 * MiB)  # would waste 50 MiB >= 20 MiB: new segment
    assert loose.ptr != big.ptr
    close = alloc.malloc(190 * MiB)  # wastes 10 MiB: reuses the 200 MiB block unsplit
    assert close.ptr == big.ptr
    assert close.size == 200 * MiB
    stats = alloc.memory_stats()
    assert stats["oversize_allocations.current"] == 2
    assert stats["oversize_segments.current"] == 2
    assert stats["max_split_size"] == 100 * MiB


def test_max_split_size_oom_path_frees_oversize_blocks_before_retrying() -> None:
    alloc = CachingAllocator(4 * GiB, conf="max_split_size_mb:100")
    alloc.set_per_process_memory_fraction(0.25)  # 1 GiB
    alloc.free(alloc.malloc(600 * MiB))
    block = alloc.malloc(500 * MiB)  # 600 wastes too much; the cap forces 600 out first
    stats = alloc.memory_stats()
    assert block.size == 500 * MiB
    assert stats["num_alloc_retries"] == 0  # release_available_cached_blocks sufficed
    assert stats["num_device_free"] == 1
    assert alloc.memory_reserved() == 500 * MiB


def test_failed_cudamalloc_frees_whole_cached_segments_and_counts_a_retry() -> None:
    alloc = CachingAllocator(GiB)
    alloc.free(alloc.malloc(600 * MiB))
    alloc.malloc(600 * MiB + 2 * MiB)  # does not fit the device with the cached 600 MiB
    stats = alloc.memory_stats()
    assert stats["num_alloc_retries"] == 1
    assert stats["num_sync_all_streams"] == 1
    assert stats["num_ooms"] == 0
    assert alloc.memory_reserved() == 602 * MiB


def test_device_capacity_and_context_overhead_limit_cudamalloc() -> None:
    alloc = CachingAllocator(GiB, context_overhead=300 * MiB)
    assert alloc.mem_get_info() == (724 * MiB, GiB)
    with pytest.raises(OutOfMemoryError, match=r"of which 724\.00 MiB is free"):
        alloc.malloc(800 * MiB)
    assert alloc.memory_stats()["num_ooms"] == 1


def test_empty_cache_releases_only_entirely_free_segments() -> None:
    alloc = CachingAllocator(GiB)
    keep = alloc.malloc(4 * MiB)
    gone = alloc.malloc(40 * MiB)
    alloc.free(alloc.malloc(4 * MiB))
    alloc.free(gone)
    alloc.empty_cache()
    assert alloc.memory_reserved() == 20 * MiB
    assert alloc.memory_snapshot()[0]["address"] == keep.ptr
    assert keep.allocated


def test_expandable_segments_map_pages_and_unmap_free_ones_on_empty_cache() -> None:
    alloc = CachingAllocator(GiB, conf="expandable_segments:True")
    a = alloc.malloc(30 * MiB)
    b = alloc.malloc(30 * MiB)
    assert b.ptr == a.ptr + 30 * MiB  # one growing segment
    assert alloc.memory_reserved() == 60 * MiB  # 3 pages of 20 MiB
    stats = alloc.memory_stats()
    assert stats["num_device_alloc"] == 2
    assert stats["segment.all.current"] == 0
    alloc.free(b)
    alloc.empty_cache()
    assert alloc.memory_reserved() == 40 * MiB  # the page behind a's end stays mapped
    alloc.free(a)
    alloc.empty_cache()
    assert alloc.memory_reserved() == 0
    assert alloc.memory_snapshot() == []


def test_expandable_small_pool_uses_2_mib_pages() -> None:
    alloc = CachingAllocator(GiB, conf="expandable_segments:True")
    alloc.malloc(3 * KiB)
    alloc.malloc(MiB)
    assert alloc.memory_reserved() == 2 * MiB
    alloc.malloc(MiB)
    assert alloc.memory_reserved() == 4 * MiB
    (seg,) = alloc.memory_snapshot()
    assert seg["segment_type"] == "small"
    assert seg["is_expandable"]
    assert seg["total_size"] == 4 * MiB


def test_per_process_fraction_caps_reserved_memory() -> None:
    alloc = CachingAllocator(10 * GiB)
    alloc.set_per_process_memory_fraction(0.1)
    assert alloc.get_per_process_memory_fraction() == pytest.approx(0.1)
    with pytest.raises(OutOfMemoryError, match=r"1024\.00 MiB allowed"):
        alloc.malloc(1100 * MiB)
    alloc.set_per_process_memory_fraction(1.0)  # removes the cap
    assert alloc.malloc(1100 * MiB).size == 1100 * MiB


def test_fraction_must_be_a_float_in_range() -> None:
    alloc = CachingAllocator(GiB)
    with pytest.raises(TypeError, match="must be `float`"):
        alloc.set_per_process_memory_fraction(1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Allowed range: 0~1"):
        alloc.set_per_process_memory_fraction(1.5)


def test_garbage_collection_frees_old_cached_segments_before_the_cap_is_hit() -> None:
    alloc = CachingAllocator(10 * GiB, conf="garbage_collection_threshold:0.5")
    alloc.set_per_process_memory_fraction(0.1)  # 1 GiB allowed, GC above 512 MiB
    alloc.free(alloc.malloc(300 * MiB))
    alloc.malloc(300 * MiB)  # reuses the cached block
    alloc.free(alloc.malloc(300 * MiB))
    alloc.malloc(350 * MiB)  # reserved 600 > 512: the cached 300 MiB block is collected
    assert alloc.memory_reserved() == 650 * MiB
    stats = alloc.memory_stats()
    assert stats["num_device_free"] == 1
    assert stats["num_alloc_retries"] == 0


def test_zero_byte_requests_never_reach_the_allocator() -> None:
    alloc = CachingAllocator(GiB)
    empty = alloc.malloc(0)
    assert (empty.ptr, empty.size) == (0, 0)
    alloc.free(empty)
    assert alloc.memory_stats()["allocation.all.allocated"] == 0


def test_exabyte_requests_fail_before_the_allocator() -> None:
    alloc = CachingAllocator(GiB)
    with pytest.raises(OutOfMemoryError, match="more than 1EB"):
        alloc.malloc(2**60)
    assert alloc.memory_stats()["num_ooms"] == 0


def test_double_free_and_foreign_blocks_are_rejected() -> None:
    alloc = CachingAllocator(GiB)
    other = CachingAllocator(GiB)
    block = alloc.malloc(MiB)
    with pytest.raises(InvalidFreeError, match="another allocator"):
        other.free(block)
    alloc.free(block)
    with pytest.raises(InvalidFreeError, match="freed already"):
        alloc.free(block)
    reused = alloc.malloc(MiB)  # the dead handle is never handed out again
    assert reused is not block
    with pytest.raises(InvalidFreeError):
        alloc.free(block)
    alloc.free(reused)


def test_negative_sizes_are_rejected() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        CachingAllocator(GiB).malloc(-1)
