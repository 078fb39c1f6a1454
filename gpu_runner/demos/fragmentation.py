"""Q1 — what is fragmentation: free memory split into holes too small for one request.

One cached segment (allocate it whole, free it), then `blocks` tensors carved from it,
then every other one freed. The free memory is plentiful but scattered.
"""

from __future__ import annotations

from gpu_runner.demos import _plot
from gpu_runner.demos._alloc import device_label, free_blocks, open_device, stat
from gpu_runner.demos._context import DemoOutput, RunContext
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
    label = device_label(ctx, dev)
    t = ctx.tr
    lines = [
        ctx.title("Fragmentation", "Κατακερματισμός μνήμης", label),
        t(
            f"One {ctx.mib(n * size)} segment, {n} × {ctx.mib(size)} tensors carved from it, "
            "every other one freed:",
            f"Ένα τμήμα (segment) {ctx.mib(n * size)}, {n} τανυστές × {ctx.mib(size)} μέσα σε "
            "αυτό, αποδεσμεύουμε τον έναν στους δύο:",
        ),
        t(
            f"- allocated `{ctx.mib(metrics['allocated_bytes'])}` · reserved "
            f"`{ctx.mib(metrics['reserved_bytes'])}` ({metrics['segments']} segment)",
            f"- κατανεμημένη (allocated) `{ctx.mib(metrics['allocated_bytes'])}` · δεσμευμένη "
            f"(reserved) `{ctx.mib(metrics['reserved_bytes'])}` ({metrics['segments']} τμήμα)",
        ),
        t(
            f"- free: `{ctx.mib(total_free)}` in {len(holes)} holes, the largest "
            f"`{ctx.mib(largest)}`",
            f"- ελεύθερα: `{ctx.mib(total_free)}` σε {len(holes)} κενά, το μεγαλύτερο "
            f"`{ctx.mib(largest)}`",
        ),
        t(
            f"- fragmentation index 1 − largest/total free = *{ctx.num(index, 3)}*",
            f"- δείκτης κατακερματισμού 1 − μεγαλύτερο/συνολικό ελεύθερο = *{ctx.num(index, 3)}*",
        ),
        t(
            f"A request above {ctx.mib(largest)} cannot use this free memory: it needs a new "
            "segment (or fails under a memory cap). `inactive_split_bytes` counts these "
            "holes.",
            f"Ένα αίτημα πάνω από {ctx.mib(largest)} δεν χωράει σε αυτή την ελεύθερη μνήμη: "
            "χρειάζεται νέο τμήμα (ή αποτυγχάνει με όριο μνήμης). Τα κενά μετρά το "
            "`inactive_split_bytes`.",
        ),
    ]
    fig, (ax,) = _plot.figure(8.0, 2.6)
    _plot.segment_map(
        ax,
        snap,
        title=t(
            f"{ctx.mib(total_free)} free, but no hole above {ctx.mib(largest)}: "
            f"fragmentation index {ctx.num(index, 3)}",
            f"{ctx.mib(total_free)} ελεύθερα, αλλά κανένα κενό πάνω από {ctx.mib(largest)}: "
            f"δείκτης κατακερματισμού {ctx.num(index, 3)}",
        ),
        legend=(
            t("allocated block", "κατανεμημένο μπλοκ (allocated)"),
            t("free hole (inactive split)", "ελεύθερο κενό (inactive split)"),
        ),
        locale=ctx.locale,
    )
    return ctx.output(lines, metrics, fig, label)


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
