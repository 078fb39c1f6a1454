"""Q8 — why memory_reserved() > memory_allocated(): rounding, segment packing, caching.

Six requests of growing size, the four counters after each, then free all and
empty_cache(). Every number is determined by the allocator's rules.
"""

from __future__ import annotations

from gpu_runner.demos import _plot
from gpu_runner.demos._alloc import open_device, stat
from gpu_runner.demos._context import DemoOutput, RunContext, mib, simulated_note, title_line
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


def run(ctx: RunContext) -> DemoOutput:
    dev = open_device(ctx)
    rows: list[dict[str, object]] = []
    live = []
    for label, nbytes in REQUESTS:
        before = dev.allocated()
        live.append(dev.alloc(nbytes))
        s = dev.stats()
        rows.append(
            {
                "request": label,
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

    head = ctx.tr(
        "request | block | requested | allocated | reserved",
        "αίτημα | μπλοκ | requested | allocated | reserved",
    )
    table = [head] + [
        f"{r['request']} | {r['block_bytes']:,} | {r['requested_bytes']:,} | "
        f"{r['allocated_bytes']:,} | {r['reserved_bytes']:,}"
        for r in rows
    ]
    lines = [
        title_line(ctx, "Reserved vs allocated", "Reserved έναντι allocated", dev.simulated),
        "```",
        *table,
        "```",
        ctx.tr(
            f"After freeing everything: allocated {after_free['allocated_bytes']}, reserved "
            f"`{mib(after_free['reserved_bytes'])}` in {after_free['segments']} segments; "
            f"after `empty_cache()`: reserved {after_empty['reserved_bytes']}.",
            f"Μετά την αποδέσμευση όλων: allocated {after_free['allocated_bytes']}, reserved "
            f"`{mib(after_free['reserved_bytes'])}` σε {after_free['segments']} τμήματα· "
            f"μετά το `empty_cache()`: reserved {after_empty['reserved_bytes']}.",
        ),
        ctx.tr(
            "Three causes: sizes round up to 512 B; small requests share 2 MiB segments, "
            "1–10 MiB ones 20 MiB segments, larger ones round to 2 MiB; freed blocks stay "
            "cached until `empty_cache()`.",
            "Τρεις αιτίες: τα μεγέθη στρογγυλεύονται σε πολλαπλάσια των 512 B· τα μικρά "
            "αιτήματα μοιράζονται τμήματα 2 MiB, όσα είναι 1–10 MiB τμήματα 20 MiB, τα "
            "μεγαλύτερα στρογγυλεύονται στα 2 MiB· τα αποδεσμευμένα μπλοκ μένουν στην "
            "cache μέχρι το `empty_cache()`.",
        ),
    ]
    if dev.simulated:
        lines.append(simulated_note(ctx))

    fig, (ax,) = _plot.figure(8.0, 3.4)
    _plot.grouped_bars(
        ax,
        [str(r["request"]) for r in rows],
        [
            ("requested", [int(str(r["requested_bytes"])) / MiB for r in rows], _plot.MUTED),
            ("allocated", [int(str(r["allocated_bytes"])) / MiB for r in rows], _plot.ALLOCATED),
            ("reserved", [int(str(r["reserved_bytes"])) / MiB for r in rows], _plot.FREE),
        ],
        ylabel="MiB",
        fmt="{:.0f}",
        title=ctx.tr(
            "Cumulative requested / allocated / reserved after each request",
            "Σωρευτικά requested / allocated / reserved μετά από κάθε αίτημα",
        ),
    )
    ax.set_yscale("symlog", linthresh=1)
    return DemoOutput(
        "\n".join(lines), metrics, _plot.to_png(fig), dev.device_line(), dev.simulated
    )


DEMO = Demo(
    id="reserved-vs-allocated",
    title="Why is memory_reserved() larger than memory_allocated()?",
    title_el="Γιατί το memory_reserved() είναι μεγαλύτερο από το memory_allocated();",
    kind=DemoKind.ALLOCATOR,
    run=run,
)
