"""Q1 — what is fragmentation: free memory split into holes too small for one request.

One cached segment (allocate it whole, free it), then `blocks` tensors carved from it,
then every other one freed. The free memory is plentiful but scattered.
"""

from __future__ import annotations

from gpu_runner.demos import _plot
from gpu_runner.demos._alloc import device_label, free_blocks, open_device, stat, usage
from gpu_runner.demos._context import DemoOutput, RunContext
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20


def run(ctx: RunContext) -> DemoOutput:
    blocks = ctx.int("blocks")
    size = ctx.int("block_mib") * MiB
    dev = open_device(ctx)
    big = dev.alloc(blocks * size)
    dev.free(big)  # the segment stays reserved: the cache keeps it
    tensors = [dev.alloc(size) for _ in range(blocks)]
    for h in tensors[::2]:
        dev.free(h)
    stats = dev.stats()
    snap = dev.snapshot()
    holes = free_blocks(snap)
    total_free = sum(holes)
    largest = max(holes, default=0)
    index = 1 - largest / total_free if total_free else 0.0
    metrics = {
        **usage(dev),
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
    t = ctx.t
    lines = [
        t(
            "One {segment} segment, {blocks} × {size} tensors carved from it, every other one "
            "freed:",
            segment=ctx.mib(blocks * size),
            blocks=blocks,
            size=ctx.mib(size),
        ),
        t(
            "- allocated `{allocated_bytes}` · reserved `{reserved_bytes}` ({segments} segment)",
            allocated_bytes=ctx.mib(metrics["allocated_bytes"]),
            reserved_bytes=ctx.mib(metrics["reserved_bytes"]),
            segments=metrics["segments"],
        ),
        t(
            "- free: `{total_free}` in {holes} holes, the largest `{largest}`",
            total_free=ctx.mib(total_free),
            holes=len(holes),
            largest=ctx.mib(largest),
        ),
        t(
            "- fragmentation index 1 − largest/total free = *{index}*",
            index=ctx.num(index, 3),
        ),
        t(
            "A request above {largest} cannot use this free memory: it needs a new "
            "segment (or fails under a memory cap). `inactive_split_bytes` counts "
            "these holes.",
            largest=ctx.mib(largest),
        ),
    ]
    fig, (ax,) = _plot.figure(8.0, 2.6)
    _plot.segment_map(
        ax,
        snap,
        title=t(
            "{total_free} free, but no hole above {largest}: fragmentation index {index}",
            total_free=ctx.mib(total_free),
            largest=ctx.mib(largest),
            index=ctx.num(index, 3),
        ),
        legend=(
            t("allocated block"),
            t("free hole (inactive split)"),
        ),
        locale=ctx.locale,
    )
    return ctx.output(ctx.t("Fragmentation"), lines, metrics, fig, label)


DEMO = Demo(
    id="fragmentation",
    title="What is fragmentation?",
    kind=DemoKind.ALLOCATOR,
    run=run,
    params=(
        Param("blocks", int, 4, 32, 16, "tensors carved from the segment"),
        Param("block_mib", int, 4, 64, 50, "size of each tensor in MiB"),
    ),
)
