"""``memory_stats()``: torch's flat statistics keys, rebuilt from the allocator's counters."""

from __future__ import annotations

from gpu_runner.sim._state import STAT_CODES, AllocatorState, Pool

# torch's name of each statistic -> the counter code kept by the pools
_ARRAY_STATS = (
    ("allocation", "a"),
    ("segment", "g"),
    ("active", "a"),  # frees complete at once, so active == allocation
    ("inactive_split", "s"),
    ("allocated_bytes", "b"),
    ("reserved_bytes", "r"),
    ("active_bytes", "b"),
    ("inactive_split_bytes", "sb"),
    ("requested_bytes", "q"),
)


def _counter(pool: Pool, code: str, field: str) -> int:
    value = getattr(pool, f"{code}_{field}")
    assert isinstance(value, int)
    return value


def _peak_all(st: AllocatorState, code: str) -> int:
    value = getattr(st, f"pk_{code}")
    assert isinstance(value, int)
    return value


def build_memory_stats(st: AllocatorState) -> dict[str, int]:
    base = st.accumulated_base
    out: dict[str, int] = {}
    pools = (("small_pool", st.small_pool), ("large_pool", st.large_pool))
    for name, code in _ARRAY_STATS:
        totals = [0, 0, 0, 0]  # current, peak, allocated, freed of "all"
        for label, pool in pools:
            cur = _counter(pool, code, "cur")
            inc = _counter(pool, code, "inc")
            allocated = inc - base.get(f"{code}.{label}.inc", 0)
            freed = inc - cur - base.get(f"{code}.{label}.dec", 0)
            prefix = f"{name}.{label}."
            out[prefix + "current"] = cur
            out[prefix + "peak"] = _counter(pool, code, "peak")
            out[prefix + "allocated"] = allocated
            out[prefix + "freed"] = freed
            totals[0] += cur
            totals[2] += allocated
            totals[3] += freed
        totals[1] = _peak_all(st, code)
        for field, value in zip(("current", "peak", "allocated", "freed"), totals, strict=True):
            out[f"{name}.all.{field}"] = value
    for name, counter in (
        ("oversize_allocations", st.oversize_alloc),
        ("oversize_segments", st.oversize_seg),
    ):
        cur, inc, peak = counter
        out[f"{name}.current"] = cur
        out[f"{name}.peak"] = peak
        out[f"{name}.allocated"] = inc - base.get(f"{name}.inc", 0)
        out[f"{name}.freed"] = inc - cur - base.get(f"{name}.dec", 0)
    out["num_alloc_retries"] = st.num_alloc_retries
    out["num_ooms"] = st.num_ooms
    out["num_sync_all_streams"] = st.num_sync_all_streams
    out["num_device_alloc"] = st.num_device_alloc
    out["num_device_free"] = st.num_device_free
    out["max_split_size"] = st.config.max_split_size_stat
    return dict(sorted(out.items()))


def reset_peaks(st: AllocatorState) -> None:
    """``reset_peak_memory_stats``: every peak becomes the current value."""
    for code in STAT_CODES:
        total = 0
        for pool in (st.small_pool, st.large_pool):
            cur = _counter(pool, code, "cur")
            setattr(pool, f"{code}_peak", cur)
            total += cur
        setattr(st, f"pk_{code}", total)
    st.oversize_alloc[2] = st.oversize_alloc[0]
    st.oversize_seg[2] = st.oversize_seg[0]


def reset_accumulated(st: AllocatorState) -> None:
    """``reset_accumulated_memory_stats``: allocated/freed totals and counters restart at 0."""
    base = st.accumulated_base
    for code in STAT_CODES:
        for label, pool in (("small_pool", st.small_pool), ("large_pool", st.large_pool)):
            inc = _counter(pool, code, "inc")
            base[f"{code}.{label}.inc"] = inc
            base[f"{code}.{label}.dec"] = inc - _counter(pool, code, "cur")
    for name, counter in (
        ("oversize_allocations", st.oversize_alloc),
        ("oversize_segments", st.oversize_seg),
    ):
        base[f"{name}.inc"] = counter[1]
        base[f"{name}.dec"] = counter[1] - counter[0]
    st.num_alloc_retries = 0
    st.num_ooms = 0
    st.num_sync_all_streams = 0
    st.num_device_alloc = 0
    st.num_device_free = 0
