"""``memory_summary()``: torch's 75-column table, computed from a ``memory_stats`` dict."""

from __future__ import annotations

from collections.abc import Callable, Mapping

_Formatter = Callable[[int, float], str]


def _scaled(
    value: int, pref: float, prefixes: tuple[str, ...], step: int, below: int
) -> tuple[int, str]:
    """`value` in the largest unit of `prefixes` (each `step` times the last) that keeps
    `pref` at `below` or more (torch's memory_summary rule)."""
    prefix = prefixes[0]
    for new_prefix in prefixes[1:]:
        if pref < below:
            break
        prefix = new_prefix
        value //= step
        pref /= step
    return value, prefix


def _format_size(size: int, pref: float) -> str:
    size, prefix = _scaled(size, pref, ("B  ", "KiB", "MiB", "GiB", "TiB", "PiB"), 1024, 768 * 1024)
    return f"{size:6d} {prefix}"


def _format_count(count: int, pref: float) -> str:
    count, prefix = _scaled(count, pref, (" ", "K", "M"), 1000, 750 * 1000)
    return f"{count:7d} {prefix} "


_POOLED: tuple[tuple[str, str, _Formatter], ...] = (
    ("allocated_bytes", "Allocated memory", _format_size),
    ("active_bytes", "Active memory", _format_size),
    ("requested_bytes", "Requested memory", _format_size),
    ("reserved_bytes", "GPU reserved memory", _format_size),
    ("inactive_split_bytes", "Non-releasable memory", _format_size),
    ("allocation", "Allocations", _format_count),
    ("active", "Active allocs", _format_count),
    ("segment", "GPU reserved segments", _format_count),
    ("inactive_split", "Non-releasable allocs", _format_count),
)
_UNPOOLED: tuple[tuple[str, str, _Formatter], ...] = (
    ("oversize_allocations", "Oversize allocations", _format_count),
    ("oversize_segments", "Oversize GPU segments", _format_count),
)
_FIELDS = ("current", "peak", "allocated", "freed")


def format_memory_summary(
    stats: Mapping[str, int], *, device: int = 0, abbreviated: bool = False
) -> str:
    """The text of ``torch.cuda.memory_summary(device, abbreviated)`` for these stats."""
    rule = "-" * 75
    double = "=" * 75
    lines = [
        double,
        f" {'':16} PyTorch CUDA memory summary, device ID {device:<17d} ",
        rule,
        f"  {'':9} CUDA OOMs: {stats['num_ooms']:<12d} | {'':6} cudaMalloc retries: "
        f"{stats['num_alloc_retries']:<8d}  ",
        double,
        "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ",
    ]
    for key, title, fmt in _POOLED:
        lines.append(rule)
        rows = [("all", title)]
        if not abbreviated:
            rows += [
                ("large_pool", "      from large pool"),
                ("small_pool", "      from small pool"),
            ]
        prefs = [stats[f"{key}.all.{field}"] for field in _FIELDS]
        for sub, name in rows:
            cells = [fmt(stats[f"{key}.{sub}.{f}"], p) for f, p in zip(_FIELDS, prefs, strict=True)]
            lines.append(f" {name:<21} | " + " | ".join(cells) + " ")
    for key, title, fmt in _UNPOOLED:
        lines.append(rule)
        values = [stats[f"{key}.{field}"] for field in _FIELDS]
        lines.append(f" {title:<21} | " + " | ".join(fmt(v, v) for v in values) + " ")
    lines.append(double)
    return "|" + "|\n|".join(lines) + "|\n"
