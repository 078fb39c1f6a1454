"""The allocator's data model (spec 5): blocks, segments, pools and the shared state.

A `Block` is a run of bytes inside one `Segment`; the blocks of a segment form a doubly
linked list in address order (``prev``/``next``), as in torch. Free, mapped blocks sit in
their pool's per-stream `SortedKeys` under the key ``size << 64 | ptr`` and in
``AllocatorState.free_blocks`` under their address; unmapped ranges of expandable segments
sit in ``Pool.unmapped`` under their address alone.
"""

from __future__ import annotations

from gpu_runner.sim._config import AllocatorConfig
from gpu_runner.sim._sizes import SMALL_BUFFER, MiB
from gpu_runner.sim._sorted import SortedKeys

ADDRESS_MASK = (1 << 64) - 1
_FIRST_ADDRESS = 0x7F00_0000_0000  # where CUDA tends to place device memory
_ALIGNMENT = 2 * MiB


class Segment:
    """One ``cudaMalloc`` allocation, or the reserved virtual range of an expandable segment."""

    __slots__ = ("expandable", "head", "mapped_pages", "page", "ptr", "size", "small", "stream")

    def __init__(self, ptr: int, size: int, stream: int, small: bool, page: int = 0) -> None:
        self.ptr = ptr
        self.size = size
        self.stream = stream
        self.small = small
        self.expandable = page > 0
        self.page = page
        # one byte per page, 1 while physical memory is mapped there
        self.mapped_pages = bytearray(size // page) if page else bytearray()
        self.head: Block | None = None  # the lowest block; maintained on split and merge


class Block:
    """An allocation handle, as returned by `CachingAllocator.malloc`.

    ``size`` is the rounded block size (what ``allocated_bytes`` counts), ``requested_size``
    the size asked for, ``ptr`` the simulated device address. A handle is live until it is
    passed to ``free``; the simulator never hands the same object out twice.
    """

    __slots__ = (
        "allocated",
        "gc_base",
        "mapped",
        "next",
        "prev",
        "ptr",
        "requested_size",
        "seg",
        "size",
        "small",
        "stream",
    )

    def __init__(self, ptr: int, size: int, stream: int, small: bool, seg: Segment) -> None:
        self.ptr = ptr
        self.size = size
        self.requested_size = 0
        self.stream = stream
        self.small = small
        self.allocated = False
        self.mapped = True
        self.prev: Block | None = None
        self.next: Block | None = None
        self.seg = seg
        self.gc_base = 0

    def __repr__(self) -> str:
        state = "allocated" if self.allocated else ("free" if self.mapped else "unmapped")
        return (
            f"Block(ptr={self.ptr:#x}, size={self.size}, requested_size={self.requested_size}, "
            f"stream={self.stream}, {state})"
        )

    @property
    def is_split(self) -> bool:
        return self.prev is not None or self.next is not None


class PoolStats:
    """current / cumulative increase / peak of each per-pool statistic.

    ``freed`` is derived (increase - current); ``all`` is the sum of the two pools except
    for its peak, which `AllocatorState` tracks. ``active`` mirrors ``allocation`` because
    frees complete at once (no ``record_stream`` events are modelled).
    """

    __slots__ = (
        "a_cur",
        "a_inc",
        "a_peak",
        "b_cur",
        "b_inc",
        "b_peak",
        "g_cur",
        "g_inc",
        "g_peak",
        "q_cur",
        "q_inc",
        "q_peak",
        "r_cur",
        "r_inc",
        "r_peak",
        "s_cur",
        "s_inc",
        "s_peak",
        "sb_cur",
        "sb_inc",
        "sb_peak",
    )

    def __init__(self) -> None:
        self.a_cur = self.a_inc = self.a_peak = 0  # allocation (count)
        self.b_cur = self.b_inc = self.b_peak = 0  # allocated_bytes
        self.q_cur = self.q_inc = self.q_peak = 0  # requested_bytes
        self.s_cur = self.s_inc = self.s_peak = 0  # inactive_split (count)
        self.sb_cur = self.sb_inc = self.sb_peak = 0  # inactive_split_bytes
        self.g_cur = self.g_inc = self.g_peak = 0  # segment (count)
        self.r_cur = self.r_inc = self.r_peak = 0  # reserved_bytes


STAT_CODES = ("a", "b", "q", "s", "sb", "g", "r")


class Pool(PoolStats):
    """The small (<= 1 MiB) or the large pool: free and unmapped blocks per stream."""

    __slots__ = ("free", "gfb_calls", "small", "unmapped")

    def __init__(self, small: bool) -> None:
        super().__init__()
        self.small = small
        self.free: dict[int, SortedKeys] = {}
        self.unmapped: dict[int, SortedKeys] = {}
        self.gfb_calls = 0  # get_free_block calls, the clock of garbage collection

    def free_list(self, stream: int) -> SortedKeys:
        found = self.free.get(stream)
        if found is None:
            found = self.free[stream] = SortedKeys()
        return found

    def unmapped_list(self, stream: int) -> SortedKeys:
        found = self.unmapped.get(stream)
        if found is None:
            found = self.unmapped[stream] = SortedKeys()
        return found


class AllocatorState:
    """Everything the allocator knows, and the bookkeeping shared by its modules."""

    def __init__(self, total_memory: int, config: AllocatorConfig, context_overhead: int) -> None:
        if total_memory <= 0:
            raise ValueError(f"total_memory must be positive, got {total_memory}")
        if not 0 <= context_overhead < total_memory:
            raise ValueError(
                f"context_overhead must be in [0, total_memory), got {context_overhead}"
            )
        self.config = config
        self.total_memory = total_memory
        self.context_overhead = context_overhead
        self.small_pool = Pool(small=True)
        self.large_pool = Pool(small=False)
        self.free_blocks: dict[int, Block] = {}  # address -> free mapped block
        self.unmapped_blocks: dict[int, Block] = {}  # address -> unmapped range
        self.segments: dict[int, Segment] = {}  # address -> segment (both kinds)
        self.next_address = _FIRST_ADDRESS
        self.driver_used = context_overhead  # what cudaMemGetInfo counts as used
        self.total_allocated_memory = 0  # torch's name for the reserved bytes
        self.allowed_memory_maximum: int | None = None
        # peaks of the "all" statistics (their current and cumulative values are sums)
        self.pk_a = self.pk_b = self.pk_q = self.pk_s = self.pk_sb = self.pk_g = self.pk_r = 0
        self.oversize_alloc = [0, 0, 0]  # current, increase, peak
        self.oversize_seg = [0, 0, 0]
        self.num_alloc_retries = 0
        self.num_ooms = 0
        self.num_sync_all_streams = 0
        self.num_device_alloc = 0
        self.num_device_free = 0
        self.accumulated_base: dict[str, int] = {}
        self.expandable = config.expandable_segments
        self.max_split = config.max_split_size
        self.gc_active = False

    # -- free-set bookkeeping ---------------------------------------------------------

    def insert_free(self, pool: Pool, block: Block) -> None:
        pool.free_list(block.stream).add((block.size << 64) | block.ptr)
        self.free_blocks[block.ptr] = block
        block.gc_base = pool.gfb_calls

    def remove_free(self, pool: Pool, block: Block) -> None:
        pool.free[block.stream].remove((block.size << 64) | block.ptr)
        del self.free_blocks[block.ptr]

    def insert_unmapped(self, pool: Pool, block: Block) -> None:
        pool.unmapped_list(block.stream).add(block.ptr)
        self.unmapped_blocks[block.ptr] = block

    def remove_unmapped(self, pool: Pool, block: Block) -> None:
        pool.unmapped[block.stream].remove(block.ptr)
        del self.unmapped_blocks[block.ptr]

    def try_merge(self, pool: Pool, dst: Block, src: Block | None) -> int:
        """Absorb the neighbour `src` into `dst` if both are free and equally mapped."""
        if src is None or src.allocated or src.mapped != dst.mapped:
            return 0
        if src.mapped:
            self.remove_free(pool, src)
        else:
            self.remove_unmapped(pool, src)
        if dst.prev is src:
            dst.ptr = src.ptr
            dst.prev = src.prev
            if dst.prev is None:
                dst.seg.head = dst
            else:
                dst.prev.next = dst
        else:
            dst.next = src.next
            if dst.next is not None:
                dst.next.prev = dst
        dst.size += src.size
        return src.size

    # -- address space and statistics -------------------------------------------------

    def reserve_address_space(self, size: int) -> int:
        ptr = self.next_address
        self.next_address += (size + _ALIGNMENT - 1) // _ALIGNMENT * _ALIGNMENT
        return ptr

    def add_reserved(self, pool: Pool, amount: int, segments: int) -> None:
        """A cudaMalloc (segments=1) or an expandable map (segments=0) of `amount` bytes."""
        self.total_allocated_memory += amount
        self.driver_used += amount
        self.num_device_alloc += 1
        pool.r_cur += amount
        pool.r_inc += amount
        pool.r_peak = max(pool.r_peak, pool.r_cur)
        self.pk_r = max(self.pk_r, self.small_pool.r_cur + self.large_pool.r_cur)
        if segments:
            pool.g_cur += segments
            pool.g_inc += segments
            pool.g_peak = max(pool.g_peak, pool.g_cur)
            self.pk_g = max(self.pk_g, self.small_pool.g_cur + self.large_pool.g_cur)
            if amount >= self.max_split:
                ov = self.oversize_seg
                ov[0] += 1
                ov[1] += 1
                ov[2] = max(ov[2], ov[0])

    def drop_reserved(self, pool: Pool, amount: int, segments: int) -> None:
        """A cudaFree (segments=1) or an expandable unmap (segments=0) of `amount` bytes."""
        self.total_allocated_memory -= amount
        self.driver_used -= amount
        self.num_device_free += 1
        pool.r_cur -= amount
        if segments:
            pool.g_cur -= segments
            if amount >= self.max_split:
                self.oversize_seg[0] -= 1

    def add_inactive_split(self, pool: Pool, count: int, nbytes: int) -> None:
        """Apply a signed change to inactive_split / inactive_split_bytes."""
        if count > 0:
            pool.s_cur += count
            pool.s_inc += count
            if pool.s_cur > pool.s_peak:
                pool.s_peak = pool.s_cur
            total = self.small_pool.s_cur + self.large_pool.s_cur
            if total > self.pk_s:
                self.pk_s = total
        else:
            pool.s_cur += count
        if nbytes > 0:
            pool.sb_cur += nbytes
            pool.sb_inc += nbytes
            if pool.sb_cur > pool.sb_peak:
                pool.sb_peak = pool.sb_cur
            total = self.small_pool.sb_cur + self.large_pool.sb_cur
            if total > self.pk_sb:
                self.pk_sb = total
        else:
            pool.sb_cur += nbytes

    # -- segments -----------------------------------------------------------------------

    def new_segment(self, pool: Pool, stream: int, size: int) -> Block:
        """cudaMalloc a segment of `size` bytes; the caller checked the capacity."""
        ptr = self.reserve_address_space(size)
        seg = Segment(ptr, size, stream, pool.small)
        block = Block(ptr, size, stream, pool.small, seg)
        seg.head = block
        self.segments[ptr] = seg
        self.add_reserved(pool, size, 1)
        return block

    def release_block(self, pool: Pool, block: Block) -> None:
        """cudaFree the whole, entirely free segment that `block` is."""
        self.remove_free(pool, block)
        del self.segments[block.seg.ptr]
        block.seg.head = None
        self.drop_reserved(pool, block.size, 1)

    def new_expandable_segment(self, pool: Pool, stream: int) -> Block:
        """Reserve 1.125 x total memory of address space, all of it unmapped."""
        page = SMALL_BUFFER if pool.small else self.config.large_segment_size
        wanted = self.total_memory + self.total_memory // 8
        size = (wanted + page - 1) // page * page
        ptr = self.reserve_address_space(size)
        seg = Segment(ptr, size, stream, pool.small, page=page)
        block = Block(ptr, size, stream, pool.small, seg)
        block.mapped = False
        seg.head = block
        self.segments[ptr] = seg
        self.insert_unmapped(pool, block)
        return block

    def device_free(self) -> int:
        return self.total_memory - self.driver_used

    def can_cuda_malloc(self, size: int) -> bool:
        return self.driver_used + size <= self.total_memory

    def largest_free_block(self) -> int:
        """Size of the largest cached free block (0 when none)."""
        best = 0
        for pool in (self.small_pool, self.large_pool):
            for keys in pool.free.values():
                last = keys.last()
                if last >= 0:
                    best = max(best, last >> 64)
        return best
