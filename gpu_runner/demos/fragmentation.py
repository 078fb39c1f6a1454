"""Q1 — what is fragmentation: free memory split into holes too small for one request.

One cached segment (allocate it whole, free it), then `blocks` tensors carved from it,
then every other one freed. The free memory is plentiful but scattered.
"""

from __future__ import annotations

from gpu_runner.demos import _plot
from gpu_runner.demos._alloc import free_blocks, open_device, stat
from gpu_runner.demos._context import DemoOutput, RunContext, mib, simulated_note, title_line
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20


def run(ctx: RunContext) -> DemoOutput:
    n = ctx.int("blocks")
    size = ctx.int("block_mib") * MiB
    dev = open_device(ctx)
    big = dev.alloc(n * size)
    dev.free(big)  # the segment stays reserved: the cache keeps it
    tensors = [dev.alloc(size) for _ in range(n)]
    for h in tensors[::2]:
        dev.free(h)
    stats = dev.stats()
    snap = dev.snapshot()
    holes = free_blocks(snap)
    total_free = sum(holes)
    largest = max(holes, default=0)
    index = 1 - largest / total_free if total_free else 0.0
    metrics = {
        "allocated_bytes": dev.allocated(),
        "reserved_bytes": dev.reserved(),
        "segments": stat(stats, "segment.all.current"),
        "inactive_split_bytes": stat(stats, "inactive_split_bytes.all.current"),
        "inactive_split_blocks": stat(stats, "inactive_split.all.current"),
        "free_blocks": len(holes),
        "total_free_bytes": total_free,
        "largest_free_bytes": largest,
        "fragmentation_index": round(index, 6),
        "simulated": dev.simulated,
    }
    lines = [
        title_line(ctx, "Fragmentation", "Κατακερματισμός μνήμης", dev.simulated),
        ctx.tr(
            f"One {mib(n * size)} segment, {n} × {mib(size)} tensors carved from it, "
            "every other one freed:",
            f"Ένα τμήμα (segment) {mib(n * size)}, {n} τανυστές × {mib(size)} μέσα σε αυτό, "
            "αποδεσμεύουμε τον έναν στους δύο:",
        ),
        f"- allocated `{mib(metrics['allocated_bytes'])}` · reserved "
        f"`{mib(metrics['reserved_bytes'])}` ({metrics['segments']} segment)",
        ctx.tr(
            f"- free: `{mib(total_free)}` in {len(holes)} holes, the largest `{mib(largest)}`",
            f"- ελεύθερα: `{mib(total_free)}` σε {len(holes)} κενά, το μεγαλύτερο `{mib(largest)}`",
        ),
        ctx.tr(
            f"- fragmentation index 1 − largest/total free = *{index:.3f}*",
            f"- δείκτης κατακερματισμού 1 − μεγαλύτερο/συνολικό ελεύθερο = *{index:.3f}*",
        ),
        ctx.tr(
            f"A request above {mib(largest)} cannot use this free memory: it needs a new "
            "segment (or fails under a memory cap). `inactive_split_bytes` counts these "
            "holes.",
            f"Ένα αίτημα πάνω από {mib(largest)} δεν χωράει σε αυτή την ελεύθερη μνήμη: "
            "χρειάζεται νέο τμήμα (ή αποτυγχάνει με όριο μνήμης). Τα κενά μετρά το "
            "`inactive_split_bytes`.",
        ),
    ]
    if dev.simulated:
        lines.append(simulated_note(ctx))
    fig, (ax,) = _plot.figure(8.0, 2.4)
    _plot.segment_map(
        ax,
        snap,
        title=ctx.tr(
            f"Segment map: largest hole {mib(largest)} of {mib(total_free)} free",
            f"Χάρτης τμήματος: μεγαλύτερο κενό {mib(largest)} από {mib(total_free)} ελεύθερα",
        ),
        legend=(ctx.tr("allocated", "δεσμευμένο"), ctx.tr("free (inactive)", "ελεύθερο")),
    )
    return DemoOutput(
        "\n".join(lines), metrics, _plot.to_png(fig), dev.device_line(), dev.simulated
    )


DEMO = Demo(
    id="fragmentation",
    title="What is fragmentation?",
    title_el="Τι είναι ο κατακερματισμός μνήμης;",
    kind=DemoKind.ALLOCATOR,
    run=run,
    params=(
        Param("blocks", int, 4, 32, 16, "tensors carved from the segment"),
        Param("block_mib", int, 4, 64, 50, "size of each tensor in MiB"),
    ),
)
