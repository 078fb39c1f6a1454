"""Giving memory back: the OOM retry path, ``empty_cache`` and garbage collection (spec 1.8)."""

from __future__ import annotations

from gpu_runner.sim._expandable import release_expandable_segment, unmap_block
from gpu_runner.sim._sizes import SIZE_MAX
from gpu_runner.sim._state import ADDRESS_MASK, AllocatorState, Block, Pool


def _free_blocks_in_order(st: AllocatorState, pool: Pool) -> list[Block]:
    """The pool's free blocks ordered by (stream, size, address), like torch's set."""
    blocks = st.free_blocks
    return [
        blocks[key & ADDRESS_MASK]
        for stream in sorted(pool.free)
        for key in list(pool.free[stream])
    ]


def release_blocks(st: AllocatorState, pool: Pool) -> None:
    """cudaFree every entirely free segment; unmap the free pages of expandable ones."""
    to_unmap: list[Block] = []
    for block in _free_blocks_in_order(st, pool):
        if block.seg.expandable:
            to_unmap.append(block)
        elif block.prev is None and block.next is None:
            st.release_block(pool, block)
    for block in to_unmap:
        unmap_block(st, pool, block)
        if block.prev is None and block.next is None and not block.mapped:
            release_expandable_segment(st, pool, block)


def release_cached_blocks(st: AllocatorState) -> None:
    """``release_cached_blocks``: what ``empty_cache`` and the last OOM retry do."""
    st.num_sync_all_streams += 1
    release_blocks(st, st.large_pool)
    release_blocks(st, st.small_pool)


def release_available_cached_blocks(st: AllocatorState, pool: Pool, stream: int, size: int) -> bool:
    """Free oversize cached blocks (only when max_split_size is set) to fit `size`."""
    max_split = st.max_split
    if max_split == SIZE_MAX:
        return False
    target = max(size, max_split)
    keys = pool.free.get(stream)
    if not keys:
        return False
    found = keys.ceil(target << 64)
    if found >= 0 and not st.free_blocks[found & ADDRESS_MASK].seg.expandable:
        block = st.free_blocks[found & ADDRESS_MASK]
        if block.is_split:
            return False  # guard: torch never meets a split oversize block here
        st.release_block(pool, block)
        return True
    # no single block is large enough: free oversize blocks from the largest down
    released = 0
    for key in keys.below_desc(target << 64):
        block = st.free_blocks[key & ADDRESS_MASK]
        if released >= target or block.size < max_split:
            break
        if not block.seg.expandable and not block.is_split:
            released += block.size
            st.release_block(pool, block)
    return released >= target


def garbage_collect(st: AllocatorState) -> None:
    """Free whole cached large segments of above-average age until reserved <= threshold."""
    allowed = st.allowed_memory_maximum
    assert allowed is not None
    threshold = int(st.config.garbage_collection_threshold * allowed)
    if st.total_allocated_memory <= threshold:
        return
    target = st.total_allocated_memory - threshold
    pool = st.large_pool
    clock = pool.gfb_calls
    candidates = [b for b in _free_blocks_in_order(st, pool) if not b.is_split]
    total_age = sum(clock - b.gc_base for b in candidates)
    count = len(candidates)
    if count == 0:
        return
    reclaimed = 0
    freed_any = True
    while reclaimed < target and freed_any and count > 0:
        age_threshold = total_age / count
        freed_any = False
        for block in _free_blocks_in_order(st, pool):
            age = clock - block.gc_base
            if not block.is_split and not block.seg.expandable and age >= age_threshold:
                freed_any = True
                reclaimed += block.size
                total_age -= age
                count -= 1
                st.release_block(pool, block)
