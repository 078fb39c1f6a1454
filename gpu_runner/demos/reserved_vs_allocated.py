"""Q8 — why memory_reserved() > memory_allocated(): rounding, segment packing, caching.

Six requests of growing size, the four counters after each, then free all and
empty_cache(). Every number is determined by the allocator's rules.
"""

from __future__ import annotations

from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._alloc import device_label, open_device, stat, usage
from gpu_runner.demos._context import DemoOutput, RunContext
from gpu_runner.demos._registry import Demo, DemoKind

MiB = 1 << 20
REQUESTS: tuple[tuple[str, int], ...] = (
    ("1 B", 1),
    ("1000 B", 1000),
    ("1 MiB + 1", MiB + 1),
    ("5 MiB", 5 * MiB),
    ("100 MiB + 1", 100 * MiB + 1),
    ("512 MiB", 512 * MiB),
)
# Log-scale ticks: 512 B and every 16th power of two above it.
TICKS = [512 << (4 * i) for i in range(6)]


def run(ctx: RunContext) -> DemoOutput:
    dev = open_device(ctx)
    rows: list[dict[str, Any]] = []
    live = []
    for name, nbytes in REQUESTS:
        before = dev.allocated()
        live.append(dev.alloc(nbytes))
        s = dev.stats()
        rows.append(
            {
                "request": name,
                "request_bytes": nbytes,
                "block_bytes": dev.allocated() - before,
                "requested_bytes": stat(s, "requested_bytes.all.current"),
                "allocated_bytes": stat(s, "allocated_bytes.all.current"),
                "reserved_bytes": stat(s, "reserved_bytes.all.current"),
                "inactive_split_bytes": stat(s, "inactive_split_bytes.all.current"),
            }
        )
    for h in live:
        dev.free(h)
    s = dev.stats()
    after_free = {
        **usage(dev),
        "segments": stat(s, "segment.all.current"),
    }
    dev.empty_cache()
    after_empty = usage(dev)
    metrics = {
        "steps": rows,
        "after_free": after_free,
        "after_empty_cache": after_empty,
        "simulated": dev.simulated,
    }
    label = device_label(ctx, dev)
    t = ctx.t
    head = t("request | its block | ∑ requested | ∑ allocated | ∑ reserved")
    table = [head] + [
        f"{r['request']} | {ctx.num(r['block_bytes'])} | {ctx.num(r['requested_bytes'])} | "
        f"{ctx.num(r['allocated_bytes'])} | {ctx.num(r['reserved_bytes'])}"
        for r in rows
    ]
    lines = [
        t(
            'Bytes; "its block" is this request\'s block, the ∑ columns are the '
            "running totals after it (`memory_stats()`):",
        ),
        "```",
        *table,
        "```",
        t(
            "After freeing everything: allocated {allocated_bytes}, reserved "
            "`{reserved_bytes}` in {segments} segments; after `empty_cache()`: "
            "reserved {reserved_bytes_2}.",
            allocated_bytes=ctx.num(after_free["allocated_bytes"]),
            reserved_bytes=ctx.mib(after_free["reserved_bytes"]),
            segments=after_free["segments"],
            reserved_bytes_2=ctx.num(after_empty["reserved_bytes"]),
        ),
        t(
            "Three causes: sizes round up to 512 B; small requests share 2 MiB "
            "segments, 1–10 MiB ones 20 MiB segments, larger ones round to 2 MiB; "
            "freed blocks stay cached until `empty_cache()`."
        ),
    ]
    fig, (ax,) = _plot.figure(8.5, 4.0)
    _bars(ctx, ax, rows, after_free, after_empty)
    return ctx.output(ctx.t("Reserved vs allocated"), lines, metrics, fig, label)


def _bars(
    ctx: RunContext,
    ax: Any,
    rows: list[dict[str, Any]],
    after_free: dict[str, int],
    after_empty: dict[str, int],
) -> None:
    t = ctx.t
    ends = [
        {"requested_bytes": 0, **after_free},
        {"requested_bytes": 0, **after_empty},
    ]
    groups = [*rows, *ends]
    _plot.grouped_bars(
        ax,
        [
            *[f"+{r['request']}" for r in rows],
            t("free all"),
            "empty_cache()",
        ],
        [
            (
                t("∑ requested"),
                [g["requested_bytes"] for g in groups],
                _plot.MUTED,
            ),
            (
                t("∑ allocated"),
                [g["allocated_bytes"] for g in groups],
                _plot.ALLOCATED,
            ),
            (
                t("∑ reserved"),
                [g["reserved_bytes"] for g in groups],
                _plot.FREE,
            ),
        ],
        ylabel=t("bytes (log scale)"),
        fmt=lambda v: "0" if v == 0 else ctx.size(v),
        vertical_labels=True,
        title=t(
            "Reserved ≥ allocated at every step; {reserved_bytes} stay cached after freeing all",
            reserved_bytes=ctx.mib(after_free["reserved_bytes"]),
        ),
    )
    ax.set_yscale("symlog", linthresh=256)
    ax.set_yticks([0, *TICKS])
    _plot.byte_ticks(ax, ctx.locale)
    ax.set_ylim(0, TICKS[-1] * 256)
    ax.tick_params(axis="x", labelsize=7.5)
    ax.axvline(len(rows) - 0.5, color=_plot.MUTED, linewidth=0.8)
    ax.legend(loc="upper left", ncol=3, frameon=False)


DEMO = Demo(
    id="reserved-vs-allocated",
    title="Why is memory_reserved() larger than memory_allocated()?",
    kind=DemoKind.ALLOCATOR,
    run=run,
)
