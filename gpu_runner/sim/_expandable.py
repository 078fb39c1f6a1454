"""Expandable segments (spec 1.12): page mapping into one growing virtual range.

Each (pool, stream) gets a segment of virtual address space (1.125 x the device memory);
physical pages of 2 MiB (small pool) or ``large_segment_size`` (large pool) are mapped at
the lowest address that fits a request and unmapped again, page by page, when the cache
is released. Mapping adds to ``reserved_bytes`` and ``num_device_alloc`` but never to the
``segment`` count; the ``inactive_split`` statistics leave these blocks out.
"""

from __future__ import annotations

from gpu_runner.sim._state import AllocatorState, Block, Pool


def _has_space(block: Block | None, size: int) -> bool:
    total = 0
    while total < size and block is not None and not block.allocated:
        total += block.size
        block = block.next
    return total >= size


def _link_after(block: Block, new: Block) -> None:
    """Put `new` right after `block` in their segment's address-ordered block list."""
    new.prev = block
    new.next = block.next
    if new.next is not None:
        new.next.prev = new
    block.next = new


def find_expandable_block(st: AllocatorState, pool: Pool, stream: int, size: int) -> Block:
    """The lowest free-or-unmapped run of this stream with `size` bytes, or a new segment."""
    keys = pool.unmapped.get(stream)
    if keys:
        for ptr in list(keys):
            candidate = st.unmapped_blocks[ptr]
            prev = candidate.prev
            if prev is not None and not prev.allocated:
                candidate = prev
            if _has_space(candidate, size):
                return candidate
    return st.new_expandable_segment(pool, stream)


def map_block(st: AllocatorState, pool: Pool, to_map: Block, size: int) -> bool:
    """Map the pages under the first `size` bytes of the unmapped range `to_map`."""
    seg = to_map.seg
    page = seg.page
    begin = (to_map.ptr - seg.ptr) // page
    end = -(-(to_map.ptr + size - seg.ptr) // page)
    mapped = (end - begin) * page
    if mapped == 0 or not st.can_cuda_malloc(mapped):
        return False  # cuMemCreate failed: nothing stays mapped
    seg.mapped_pages[begin:end] = b"\x01" * (end - begin)
    st.remove_unmapped(pool, to_map)
    to_map.mapped = True
    if mapped < to_map.size:
        rest = Block(to_map.ptr + mapped, to_map.size - mapped, to_map.stream, pool.small, seg)
        rest.mapped = False
        _link_after(to_map, rest)
        st.insert_unmapped(pool, rest)
        to_map.size = mapped
    st.try_merge(pool, to_map, to_map.prev)
    st.try_merge(pool, to_map, to_map.next)
    st.insert_free(pool, to_map)
    st.add_reserved(pool, mapped, 0)
    return True


def try_allocate_expandable(st: AllocatorState, pool: Pool, stream: int, size: int) -> Block | None:
    """Map enough pages for a rounded request of `size`; the block left out of the free set."""
    candidate = find_expandable_block(st, pool, stream, size)
    if not candidate.mapped and not map_block(st, pool, candidate, min(candidate.size, size)):
        return None
    while candidate.size < size:
        # invariant: candidate is free and followed by an unmapped range
        nxt = candidate.next
        assert nxt is not None and not nxt.mapped
        if not map_block(st, pool, nxt, min(size - candidate.size, nxt.size)):
            return None
        candidate = nxt
    st.remove_free(pool, candidate)
    return candidate


def unmap_block(st: AllocatorState, pool: Pool, block: Block) -> None:
    """Unmap the whole pages inside the free block; keep the partial pages as free blocks."""
    seg = block.seg
    page = seg.page
    begin = -(-(block.ptr - seg.ptr) // page)
    end = (block.ptr + block.size - seg.ptr) // page
    if begin >= end:
        return
    st.remove_free(pool, block)
    start = seg.ptr + begin * page
    length = (end - begin) * page
    before = start - block.ptr
    if before > 0:
        head = Block(block.ptr, before, block.stream, pool.small, seg)
        head.prev = block.prev
        head.next = block
        if head.prev is None:
            seg.head = head
        else:
            head.prev.next = head
        block.prev = head
        st.insert_free(pool, head)
    after = block.size - before - length
    if after > 0:
        tail = Block(start + length, after, block.stream, pool.small, seg)
        _link_after(block, tail)
        st.insert_free(pool, tail)
    block.ptr = start
    block.size = length
    block.mapped = False
    seg.mapped_pages[begin:end] = bytes(end - begin)
    st.try_merge(pool, block, block.prev)
    st.try_merge(pool, block, block.next)
    st.insert_unmapped(pool, block)
    st.drop_reserved(pool, length, 0)


def release_expandable_segment(st: AllocatorState, pool: Pool, block: Block) -> None:
    """Give back the address space of a segment that is one unmapped range again."""
    st.remove_unmapped(pool, block)
    del st.segments[block.seg.ptr]
    block.seg.head = None
