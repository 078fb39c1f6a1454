"""Q8 — why memory_reserved() > memory_allocated(): rounding, segment packing, caching.

Six requests of growing size, the four counters after each, then free all and
empty_cache(). Every number is determined by the allocator's rules.
"""

from __future__ import annotations

from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._alloc import device_label, open_device, stat
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
        "allocated_bytes": dev.allocated(),
        "reserved_bytes": dev.reserved(),
        "segments": stat(s, "segment.all.current"),
    }
    dev.empty_cache()
    after_empty = {"allocated_bytes": dev.allocated(), "reserved_bytes": dev.reserved()}
    metrics = {
        "steps": rows,
        "after_free": after_free,
        "after_empty_cache": after_empty,
        "simulated": dev.simulated,
    }
    label = device_label(ctx, dev)
    t = ctx.tr
    head = t(
        "request | its block | Σ requested | Σ allocated | Σ reserved",
        "αίτημα | το μπλοκ του | Σ requested | Σ allocated | Σ reserved",
    )
    table = [head] + [
        f"{r['request']} | {ctx.num(r['block_bytes'])} | {ctx.num(r['requested_bytes'])} | "
        f"{ctx.num(r['allocated_bytes'])} | {ctx.num(r['reserved_bytes'])}"
        for r in rows
    ]
    lines = [
        ctx.title(
            "Reserved vs allocated", "Δεσμευμένη (reserved) έναντι κατανεμημένης (allocated)", label
        ),
        t(
            'Bytes; "its block" is this request\'s block, the Σ columns are the running '
            "totals after it (`memory_stats()`):",
            'Σε bytes· "το μπλοκ του" είναι το μπλοκ του αιτήματος, οι στήλες Σ τα σύνολα '
            "μετά από αυτό (`memory_stats()`):",
        ),
        "```",
        *table,
        "```",
        t(
            f"After freeing everything: allocated {ctx.num(after_free['allocated_bytes'])}, "
            f"reserved `{ctx.mib(after_free['reserved_bytes'])}` in {after_free['segments']} "
            f"segments; after `empty_cache()`: reserved "
            f"{ctx.num(after_empty['reserved_bytes'])}.",
            f"Μετά την αποδέσμευση όλων: κατανεμημένη (allocated) "
            f"{ctx.num(after_free['allocated_bytes'])}, δεσμευμένη (reserved) "
            f"`{ctx.mib(after_free['reserved_bytes'])}` σε {after_free['segments']} τμήματα· "
            f"μετά το `empty_cache()`: δεσμευμένη {ctx.num(after_empty['reserved_bytes'])}.",
        ),
        t(
            "Three causes: sizes round up to 512 B; small requests share 2 MiB segments, "
            "1–10 MiB ones 20 MiB segments, larger ones round to 2 MiB; freed blocks stay "
            "cached until `empty_cache()`.",
            "Τρεις αιτίες: τα μεγέθη στρογγυλεύονται σε πολλαπλάσια των 512 B· τα μικρά "
            "αιτήματα μοιράζονται τμήματα 2 MiB, όσα είναι 1–10 MiB τμήματα 20 MiB, τα "
            "μεγαλύτερα στρογγυλεύονται στα 2 MiB· τα αποδεσμευμένα μπλοκ μένουν στην "
            "cache μέχρι το `empty_cache()`.",
        ),
    ]
    fig, (ax,) = _plot.figure(8.5, 4.0)
    _bars(ctx, ax, rows, after_free, after_empty)
    return ctx.output(lines, metrics, fig, label)


def _bars(
    ctx: RunContext,
    ax: Any,
    rows: list[dict[str, Any]],
    after_free: dict[str, int],
    after_empty: dict[str, int],
) -> None:
    t = ctx.tr
    ends = [
        {"requested_bytes": 0, **after_free},
        {"requested_bytes": 0, **after_empty},
    ]
    groups = [*rows, *ends]
    _plot.grouped_bars(
        ax,
        [
            *[f"+{r['request']}" for r in rows],
            t("free all", "αποδέσμευση\nόλων"),
            "empty_cache()",
        ],
        [
            (t("Σ requested", "Σ requested"), [g["requested_bytes"] for g in groups], _plot.MUTED),
            (
                t("Σ allocated", "Σ allocated (κατανεμημένη)"),
                [g["allocated_bytes"] for g in groups],
                _plot.ALLOCATED,
            ),
            (
                t("Σ reserved", "Σ reserved (δεσμευμένη)"),
                [g["reserved_bytes"] for g in groups],
                _plot.FREE,
            ),
        ],
        ylabel=t("bytes (log scale)", "bytes (λογαριθμική κλίμακα)"),
        fmt=lambda v: "0" if v == 0 else ctx.size(v),
        vertical_labels=True,
        title=t(
            f"Reserved ≥ allocated at every step; {ctx.mib(after_free['reserved_bytes'])} stay "
            "cached after freeing all",
            f"Δεσμευμένη ≥ κατανεμημένη σε κάθε βήμα· {ctx.mib(after_free['reserved_bytes'])} "
            "μένουν στην cache μετά την αποδέσμευση",
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
    title_el="Γιατί το memory_reserved() είναι μεγαλύτερο από το memory_allocated();",
    kind=DemoKind.ALLOCATOR,
    run=run,
)
