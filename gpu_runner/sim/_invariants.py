"""A full consistency check of an allocator, recomputed from its block lists.

`check_invariants` walks every segment and compares what it finds with the pools, the
address maps and every statistic. It is slow (it touches every block) and meant for tests
and for demos that want to prove a state is sound.
"""

from __future__ import annotations

from gpu_runner.sim._allocator import CachingAllocator
from gpu_runner.sim._sizes import MiB
from gpu_runner.sim._state import ADDRESS_MASK, Block, Pool, Segment


class InvariantError(AssertionError):
    """The allocator's state contradicts itself; the message says where."""


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise InvariantError(message)


def _walk(seg: Segment) -> list[Block]:
    head = seg.head
    _check(head is not None and head.prev is None, f"segment {seg.ptr:#x} has no head")
    blocks: list[Block] = []
    block = head
    addr = seg.ptr
    while block is not None:
        _check(block.ptr == addr, f"gap or overlap at {addr:#x} in segment {seg.ptr:#x}")
        _check(block.seg is seg and block.size > 0, f"bad block {block!r}")
        _check(block.stream == seg.stream and block.small == seg.small, f"{block!r} strays")
        if block.next is not None:
            _check(block.next.prev is block, f"broken links after {block!r}")
        if blocks:
            prev = blocks[-1]
            both_free = not prev.allocated and not block.allocated
            _check(
                not (both_free and prev.mapped == block.mapped),
                f"free neighbours {prev!r} and {block!r} were not merged",
            )
        blocks.append(block)
        addr += block.size
        block = block.next
    _check(addr == seg.ptr + seg.size, f"segment {seg.ptr:#x} blocks do not add up")
    return blocks


def _check_pages(seg: Segment, blocks: list[Block]) -> int:
    """Mapped blocks lie on mapped pages, unmapped ranges on unmapped whole pages."""
    page = seg.page
    for block in blocks:
        first = (block.ptr - seg.ptr) // page
        last = -(-(block.ptr + block.size - seg.ptr) // page)
        pages = seg.mapped_pages[first:last]
        if block.mapped:
            _check(all(pages), f"{block!r} is not backed by mapped pages")
        else:
            _check(not block.allocated, f"{block!r} is allocated but unmapped")
            _check((block.ptr - seg.ptr) % page == 0 and block.size % page == 0, "unaligned")
            _check(not any(pages), f"{block!r} overlaps a mapped page")
    return sum(seg.mapped_pages) * page


def check_invariants(alloc: CachingAllocator) -> None:
    """Raise `InvariantError` unless every structure and statistic is consistent."""
    free_seen: dict[int, Block] = {}
    unmapped_seen: dict[int, Block] = {}
    expected: dict[bool, dict[str, int]] = {
        small: dict.fromkeys(("a", "b", "q", "s", "sb", "g", "r"), 0) for small in (True, False)
    }
    oversize_allocs = oversize_segs = 0
    end = 0
    for ptr in sorted(alloc.segments):
        seg = alloc.segments[ptr]
        _check(ptr == seg.ptr and ptr >= end, f"segment {ptr:#x} overlaps the one before")
        end = ptr + seg.size
        blocks = _walk(seg)
        e = expected[seg.small]
        if seg.expandable:
            e["r"] += _check_pages(seg, blocks)
        else:
            e["r"] += seg.size
            e["g"] += 1
            oversize_segs += seg.size >= alloc.max_split
        for block in blocks:
            if block.allocated:
                e["a"] += 1
                e["b"] += block.size
                e["q"] += block.requested_size
                oversize_allocs += block.size >= alloc.max_split
            elif block.mapped:
                free_seen[block.ptr] = block
                if block.is_split and not seg.expandable:
                    e["s"] += 1
                    e["sb"] += block.size
            else:
                unmapped_seen[block.ptr] = block
    _check(free_seen == alloc.free_blocks, "free_blocks differs from the free blocks found")
    _check(unmapped_seen == alloc.unmapped_blocks, "unmapped_blocks differs from the segments")
    for pool in (alloc.small_pool, alloc.large_pool):
        _check_pool(alloc, pool, expected[pool.small])
    _check(alloc.oversize_alloc[0] == oversize_allocs, "oversize_allocations.current is off")
    _check(alloc.oversize_seg[0] == oversize_segs, "oversize_segments.current is off")
    reserved = alloc.memory_reserved()
    allocated = alloc.memory_allocated()
    _check(alloc.total_allocated_memory == reserved, "total_allocated_memory != reserved")
    _check(alloc.driver_used == alloc.context_overhead + reserved, "driver usage is off")
    _check(0 <= allocated <= reserved, f"allocated {allocated} > reserved {reserved}")
    _check(alloc.driver_used <= alloc.total_memory, "more memory in use than the device has")
    cap = alloc.allowed_memory_maximum
    if cap is not None and alloc.expandable:
        # torch checks the cap against the request's segment size (a multiple of 2 MiB),
        # then maps whole pages: a large-pool map may overshoot by a page less 2 MiB
        cap += alloc.config.large_segment_size - 2 * MiB
    _check(cap is None or reserved <= cap, f"reserved {reserved} exceeds the cap {cap}")
    _check(alloc.max_memory_reserved() >= reserved, "peak reserved below current")
    _check(alloc.max_memory_allocated() >= allocated, "peak allocated below current")


def _check_pool(alloc: CachingAllocator, pool: Pool, expected: dict[str, int]) -> None:
    name = "small" if pool.small else "large"
    for code, value in expected.items():
        current = getattr(pool, f"{code}_cur")
        _check(current == value, f"{name} pool {code}: counter {current}, recomputed {value}")
        _check(getattr(pool, f"{code}_peak") >= current, f"{name} pool {code}: peak < current")
    for stream, keys in pool.free.items():
        for key in keys:
            block = alloc.free_blocks.get(key & ADDRESS_MASK)
            _check(
                block is not None and block.size == key >> 64 and block.stream == stream,
                f"stale key in the {name} pool's free set: size {key >> 64}",
            )
            _check(block is not None and block.small == pool.small, "block in the wrong pool")
    for stream, keys in pool.unmapped.items():
        for ptr in keys:
            block = alloc.unmapped_blocks.get(ptr)
            _check(block is not None and block.stream == stream, "stale unmapped key")
    count = sum(len(keys) for keys in pool.free.values())
    _check(count == sum(b.small == pool.small for b in alloc.free_blocks.values()), "count")
