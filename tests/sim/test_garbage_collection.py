"""`garbage_collection_threshold` as CUDACachingAllocator.cpp's
``garbage_collect_cached_blocks`` runs it, the rules the `gc-threshold` question family
teaches: at a cache miss with reserved memory over threshold x allowed, free every cached
unsplit large block at least the mean age (age: large-pool ``get_free_block`` calls since
the block was freed), pass after pass with the mean of those left, until under it; a pass
does not stop halfway once the target is met."""

from __future__ import annotations

from gpu_runner.sim import CachingAllocator, GiB, MiB


def _trace(threshold: float) -> CachingAllocator:
    """a, b, c, d then e, each larger (no reuse); a, b, c freed at different times."""
    alloc = CachingAllocator(16 * GiB, conf=f"garbage_collection_threshold:{threshold}")
    alloc.set_per_process_memory_fraction(1 / 16)  # allowed: 1 GiB
    a = alloc.malloc(100 * MiB)  # large-pool clock 1
    b = alloc.malloc(120 * MiB)  # 2
    alloc.free(a)  # age counted from 2
    c = alloc.malloc(140 * MiB)  # 3
    alloc.free(b)  # from 3
    alloc.malloc(160 * MiB)  # 4
    alloc.free(c)  # from 4
    alloc.malloc(200 * MiB)  # 5: reserved 520 MiB; ages a 3, b 2, c 1, mean 2
    return alloc


def test_one_pass_frees_every_block_at_least_the_mean_age_not_just_enough() -> None:
    alloc = _trace(0.5)  # threshold 512 MiB: 8 MiB over, yet a and b both go
    assert alloc.memory_reserved() == (520 - 220 + 200) * MiB
    stats = alloc.memory_stats()
    assert stats["num_device_free"] == 2
    assert stats["num_alloc_retries"] == 0  # the collection, not the OOM retry path
    cached = [s["total_size"] for s in alloc.memory_snapshot() if s["allocated_size"] == 0]
    assert cached == [140 * MiB]  # c, the youngest, stays cached


def test_passes_go_on_with_the_mean_of_the_blocks_left() -> None:
    alloc = _trace(0.2)  # threshold 204.8 MiB: a and b (220) are not enough, c goes next
    assert alloc.memory_reserved() == (520 - 360 + 200) * MiB
    assert alloc.memory_stats()["num_device_free"] == 3


def test_no_collection_under_the_threshold_or_without_a_fraction() -> None:
    alloc = _trace(0.6)  # threshold 614.4 MiB: 520 is under it
    assert alloc.memory_reserved() == 720 * MiB
    plain = CachingAllocator(16 * GiB, conf="garbage_collection_threshold:0.5")
    x = plain.malloc(600 * MiB)
    plain.free(x)
    plain.malloc(700 * MiB)  # no fraction set: the threshold has nothing to act on
    assert plain.memory_reserved() == 1300 * MiB
