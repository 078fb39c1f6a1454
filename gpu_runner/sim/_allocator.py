"""`CachingAllocator`: the simulated ``c10::cuda::CUDACachingAllocator`` of one device.

`malloc` and `free` are written out flat, without helper calls, because they are the hot
path of trace replay (see ``bench/simulator.py``); the rare paths live in `_release`,
`_expandable` and `_state`.
"""

from __future__ import annotations

from gpu_runner.sim._config import AllocatorConfig, parse_conf
from gpu_runner.sim._errors import InvalidFreeError
from gpu_runner.sim._expandable import try_allocate_expandable
from gpu_runner.sim._oom import out_of_memory
from gpu_runner.sim._release import (
    garbage_collect,
    release_available_cached_blocks,
    release_cached_blocks,
)
from gpu_runner.sim._sizes import (
    MIN_BLOCK_SIZE,
    ONE_EXA_BYTES,
    SMALL_SIZE,
    allocation_size,
    round_size,
)
from gpu_runner.sim._snapshot import SegmentInfo, build_snapshot
from gpu_runner.sim._sorted import SortedKeys
from gpu_runner.sim._state import ADDRESS_MASK, AllocatorState, Block, Pool, Segment
from gpu_runner.sim._stats import build_memory_stats, reset_accumulated, reset_peaks
from gpu_runner.sim._summary import format_memory_summary

_NULL_SEGMENT = Segment(0, 0, 0, True)


class CachingAllocator(AllocatorState):
    """One simulated CUDA device and its caching allocator (native backend, default pool).

    `total_memory` is the device's ``totalGlobalMem``; `conf` a ``PYTORCH_CUDA_ALLOC_CONF``
    string (or a parsed `AllocatorConfig`); `context_overhead` bytes the driver counts as
    used before the allocator asks for anything (CUDA context, other processes).
    """

    def __init__(
        self,
        total_memory: int,
        *,
        conf: str | AllocatorConfig = "",
        context_overhead: int = 0,
    ) -> None:
        config = conf if isinstance(conf, AllocatorConfig) else parse_conf(conf)
        super().__init__(total_memory, config, context_overhead)
        self._divisions = config.roundup_power2_divisions
        self._rounds_power2 = any(d > 1 for d in self._divisions)
        self._non_split_rounding = config.max_non_split_rounding
        self._large_segment = config.large_segment_size
        if config.per_process_memory_fraction < 1.0:
            self.set_per_process_memory_fraction(config.per_process_memory_fraction)

    # -- allocation ---------------------------------------------------------------------

    def malloc(self, nbytes: int, stream: int = 0) -> Block:
        """Allocate `nbytes` on `stream` like ``torch.empty(nbytes, dtype=torch.uint8)``.

        Raises `OutOfMemoryError` (torch's message) when neither the cache nor the device
        can provide the block.
        """
        if nbytes <= 0 or nbytes >= ONE_EXA_BYTES:
            return self._malloc_edge(nbytes, stream)
        if self._rounds_power2:
            size = round_size(nbytes, self._divisions)
        elif nbytes <= MIN_BLOCK_SIZE:
            size = MIN_BLOCK_SIZE
        else:
            size = (nbytes + 511) & -512
        pool = self.small_pool if size <= SMALL_SIZE else self.large_pool
        if self.gc_active:
            pool.gfb_calls += 1
        block = None
        keys = pool.free.get(stream)
        if keys is not None:
            key = keys.ceil(size << 64)
            if key >= 0:
                if self.expandable:
                    key = self._expandable_best_fit(keys, key)
                bsize = key >> 64
                max_split = self.max_split
                if not (
                    (size < max_split and bsize >= max_split)
                    or (size >= max_split and bsize >= size + self._non_split_rounding)
                ):
                    keys.remove(key)
                    block = self.free_blocks.pop(key & ADDRESS_MASK)
        if block is None:
            block = self._malloc_slow(pool, stream, size)
            keys = pool.free.get(stream)

        # alloc_found_block: the front `size` bytes go out as a fresh handle
        bsize = block.size
        remaining = bsize - size
        if pool.small or self.expandable:
            split = remaining >= MIN_BLOCK_SIZE
        else:
            split = size < self.max_split and remaining > SMALL_SIZE
        seg = block.seg
        prev = block.prev
        already_split = prev is not None or block.next is not None
        new = Block(block.ptr, size if split else bsize, stream, pool.small, seg)
        new.prev = prev
        if prev is None:
            seg.head = new
        else:
            prev.next = new
        if split:
            new.next = block
            block.prev = new
            block.ptr += size
            block.size = remaining
            if keys is None:
                keys = pool.free_list(stream)
            keys.add((remaining << 64) | block.ptr)
            self.free_blocks[block.ptr] = block
            block.gc_base = pool.gfb_calls
            if not self.expandable:
                if already_split:
                    pool.sb_cur -= size
                else:
                    self.add_inactive_split(pool, 1, remaining)
        else:
            nxt = block.next
            new.next = nxt
            if nxt is not None:
                nxt.prev = new
            block.prev = block.next = None
            if already_split and not self.expandable:
                pool.s_cur -= 1
                pool.sb_cur -= bsize
        new.allocated = True
        new.requested_size = nbytes
        bsize = new.size
        # allocation, allocated_bytes (= active, active_bytes) and requested_bytes
        small = self.small_pool
        large = self.large_pool
        cur = pool.a_cur + 1
        pool.a_cur = cur
        pool.a_inc += 1
        if cur > pool.a_peak:
            pool.a_peak = cur
        cur = small.a_cur + large.a_cur
        if cur > self.pk_a:
            self.pk_a = cur
        cur = pool.b_cur + bsize
        pool.b_cur = cur
        pool.b_inc += bsize
        if cur > pool.b_peak:
            pool.b_peak = cur
        cur = small.b_cur + large.b_cur
        if cur > self.pk_b:
            self.pk_b = cur
        cur = pool.q_cur + nbytes
        pool.q_cur = cur
        pool.q_inc += nbytes
        if cur > pool.q_peak:
            pool.q_peak = cur
        cur = small.q_cur + large.q_cur
        if cur > self.pk_q:
            self.pk_q = cur
        if bsize >= self.max_split:
            ov = self.oversize_alloc
            ov[0] += 1
            ov[1] += 1
            if ov[0] > ov[2]:
                ov[2] = ov[0]
        return new

    def _expandable_best_fit(self, keys: SortedKeys, key: int) -> int:
        """Prefer a later block whose size plus its unmapped tail is smaller (spec 1.5)."""
        blocks = self.free_blocks
        block = blocks[key & ADDRESS_MASK]
        tail = block.next
        best = block.size + (tail.size if tail is not None and not tail.mapped else 0)
        while True:
            later = keys.ceil(key + 1)
            if later < 0:
                return key
            block = blocks[later & ADDRESS_MASK]
            tail = block.next
            size = block.size + (tail.size if tail is not None and not tail.mapped else 0)
            if size >= best:
                return key
            key, best = later, size

    def _malloc_slow(self, pool: Pool, stream: int, size: int) -> Block:
        """No cached block fits: new memory, then the two release-and-retry steps, then OOM."""
        alloc_size = allocation_size(size, self._large_segment)
        if self.gc_active:
            garbage_collect(self)
        block = self._alloc_block(pool, stream, size, alloc_size, retry=False)
        if block is None and release_available_cached_blocks(self, pool, stream, size):
            block = self._alloc_block(pool, stream, size, alloc_size, retry=False)
        if block is None:
            release_cached_blocks(self)
            block = self._alloc_block(pool, stream, size, alloc_size, retry=True)
        if block is None:
            self.num_ooms += 1
            raise out_of_memory(self, alloc_size)
        return block

    def _alloc_block(
        self, pool: Pool, stream: int, size: int, alloc_size: int, *, retry: bool
    ) -> Block | None:
        if retry:
            self.num_alloc_retries += 1
        allowed = self.allowed_memory_maximum
        if allowed is not None and self.total_allocated_memory + alloc_size > allowed:
            return None  # over the per-process fraction: cudaMalloc is not even called
        if self.expandable:
            return try_allocate_expandable(self, pool, stream, size)
        if not self.can_cuda_malloc(alloc_size):
            return None
        return self.new_segment(pool, stream, alloc_size)

    def _malloc_edge(self, nbytes: int, stream: int) -> Block:
        if not isinstance(nbytes, int) or isinstance(nbytes, bool):
            raise TypeError(f"malloc needs an int byte count, got {nbytes!r}")
        if nbytes < 0:
            raise ValueError(f"malloc needs a byte count >= 0, got {nbytes}")
        if nbytes == 0:
            # torch.empty(0) never reaches the allocator: a null data pointer
            return Block(0, 0, stream, True, _NULL_SEGMENT)
        raise out_of_memory(
            self, nbytes, "CUDA out of memory. Tried to allocate more than 1EB memory."
        )

    # -- free ---------------------------------------------------------------------------

    def free(self, block: Block) -> None:
        """Return a block to the cache (never to the device), merging free neighbours."""
        seg = block.seg
        if not block.allocated or self.segments.get(seg.ptr) is not seg:
            self._reject_free(block)
            return
        block.allocated = False
        pool = self.small_pool if block.small else self.large_pool
        size = block.size
        pool.a_cur -= 1
        pool.b_cur -= size
        pool.q_cur -= block.requested_size
        if size >= self.max_split:
            self.oversize_alloc[0] -= 1
        # free_block: merge with the free, mapped neighbours of the same segment
        keys = pool.free.get(block.stream)
        if keys is None:
            keys = pool.free_list(block.stream)
        blocks = self.free_blocks
        count = 0
        nbytes = 0
        prev = block.prev
        if prev is not None and not prev.allocated and prev.mapped:
            psize = prev.size
            keys.remove((psize << 64) | prev.ptr)
            del blocks[prev.ptr]
            block.ptr = prev.ptr
            before = prev.prev
            block.prev = before
            if before is None:
                seg.head = block
            else:
                before.next = block
            block.size += psize
            count = -1
            nbytes = -psize
        nxt = block.next
        if nxt is not None and not nxt.allocated and nxt.mapped:
            nsize = nxt.size
            keys.remove((nsize << 64) | nxt.ptr)
            del blocks[nxt.ptr]
            after = nxt.next
            block.next = after
            if after is not None:
                after.prev = block
            block.size += nsize
            count -= 1
            nbytes -= nsize
        keys.add((block.size << 64) | block.ptr)
        blocks[block.ptr] = block
        block.gc_base = pool.gfb_calls
        if self.expandable:
            return
        # inactive_split(_bytes): -1/-size per merged neighbour, +1/+size if still split
        if block.prev is not None or block.next is not None:
            count += 1
            nbytes += block.size
        if count > 0:
            cur = pool.s_cur + count
            pool.s_cur = cur
            pool.s_inc += count
            if cur > pool.s_peak:
                pool.s_peak = cur
            cur = self.small_pool.s_cur + self.large_pool.s_cur
            if cur > self.pk_s:
                self.pk_s = cur
        else:
            pool.s_cur += count
        if nbytes > 0:
            cur = pool.sb_cur + nbytes
            pool.sb_cur = cur
            pool.sb_inc += nbytes
            if cur > pool.sb_peak:
                pool.sb_peak = cur
            cur = self.small_pool.sb_cur + self.large_pool.sb_cur
            if cur > self.pk_sb:
                self.pk_sb = cur
        else:
            pool.sb_cur += nbytes

    def _reject_free(self, block: Block) -> None:
        if block.seg is _NULL_SEGMENT:
            return  # freeing the result of malloc(0) is a no-op, as for a null DataPtr
        if block.allocated:
            raise InvalidFreeError(f"{block!r} belongs to another allocator: free it there")
        raise InvalidFreeError(
            f"{block!r} is not allocated: it was freed already (a handle is dead after free)"
        )

    # -- releasing and limits -----------------------------------------------------------

    def empty_cache(self) -> None:
        """Release every entirely free segment (and free expandable pages) to the device."""
        release_cached_blocks(self)

    def set_per_process_memory_fraction(self, fraction: float) -> None:
        """Cap reserved memory at ``int(fraction * total_memory)``; 1.0 removes the cap."""
        if not isinstance(fraction, float):
            raise TypeError("Invalid type for fraction argument, must be `float`")
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
        self.allowed_memory_maximum = (
            None if fraction >= 1.0 else int(fraction * float(self.total_memory))
        )
        self.gc_active = (
            self.allowed_memory_maximum is not None
            and self.config.garbage_collection_threshold > 0.0
        )

    def get_per_process_memory_fraction(self) -> float:
        if self.allowed_memory_maximum is None:
            return 1.0
        return self.allowed_memory_maximum / self.total_memory

    # -- queries ------------------------------------------------------------------------

    def memory_allocated(self) -> int:
        return self.small_pool.b_cur + self.large_pool.b_cur

    def max_memory_allocated(self) -> int:
        return self.pk_b

    def memory_reserved(self) -> int:
        return self.small_pool.r_cur + self.large_pool.r_cur

    def max_memory_reserved(self) -> int:
        return self.pk_r

    def mem_get_info(self) -> tuple[int, int]:
        """``(free, total)`` as ``cudaMemGetInfo`` reports them (cached memory is used)."""
        return self.device_free(), self.total_memory

    def memory_stats(self) -> dict[str, int]:
        """torch's flat, sorted ``memory_stats()`` dictionary."""
        return build_memory_stats(self)

    def reset_peak_memory_stats(self) -> None:
        reset_peaks(self)

    def reset_accumulated_memory_stats(self) -> None:
        reset_accumulated(self)

    def memory_snapshot(self) -> list[SegmentInfo]:
        """torch's ``memory_snapshot()``: one dict per segment (per mapped run), by address."""
        return build_snapshot(self)

    def memory_summary(self, abbreviated: bool = False) -> str:
        """torch's ``memory_summary()`` table, from this allocator's statistics."""
        return format_memory_summary(self.memory_stats(), abbreviated=abbreviated)
