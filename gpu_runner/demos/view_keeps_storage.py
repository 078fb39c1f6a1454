"""A slice keeps its whole storage alive; `del` of the base frees nothing; `.clone()` fixes it.

CPU torch shows it directly (``untyped_storage().nbytes()`` and ``weakref.finalize``); the
allocator figures (what a GPU would keep reserved and allocated) come from the CUDA
allocator on a GPU, or from the simulator.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._alloc import device_label, open_device, usage
from gpu_runner.demos._context import DemoOutput, RunContext
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20


def storage_check(torch: Any, base_bytes: int, keep: int) -> dict[str, Any]:
    base = torch.empty(base_bytes, dtype=torch.uint8)
    freed: list[bool] = []
    weakref.finalize(base.untyped_storage(), freed.append, True)
    head = base[:keep]
    del base
    gc.collect()
    out: dict[str, Any] = {
        "slice_storage_bytes": int(head.untyped_storage().nbytes()),
        "base_freed_after_del": bool(freed),
    }
    fixed = head.clone()
    del head
    gc.collect()
    out["clone_storage_bytes"] = int(fixed.untyped_storage().nbytes())
    out["base_freed_after_clone"] = bool(freed)
    return out


def run(ctx: RunContext) -> DemoOutput:
    base_bytes = ctx.int("base_mib") * MiB
    keep = ctx.int("slice_kib") * 1024
    dev = open_device(ctx)
    steps: list[dict[str, Any]] = []

    def record(step: str) -> None:
        steps.append({"step": step, **usage(dev)})

    base = dev.alloc(base_bytes)
    record("base = empty(n)")
    head = dev.view(base)
    dev.free(base)
    record("head = base[:k]; del base")
    fixed = dev.alloc(keep)
    dev.free(head)
    record("fixed = head.clone(); del head")
    dev.empty_cache()
    record("empty_cache()")
    dev.free(fixed)
    dev.empty_cache()

    cpu = storage_check(ctx.torch, base_bytes, keep) if ctx.torch is not None else None
    metrics = {
        "base_bytes": base_bytes,
        "slice_bytes": keep,
        "allocator": steps,
        "cpu_storage": cpu,
        "simulated": dev.simulated,
    }
    label = device_label(ctx, dev, cpu_check=cpu is not None)
    t = ctx.t
    lines = []
    if cpu is not None:
        lines.append(
            t(
                "CPU torch: `head = base[:{keep}]`; `del base` → "
                "`head.untyped_storage().nbytes()` = {slice_storage_bytes}, base storage "
                "freed: {base_freed_after_del}. After `head.clone()` and `del head`: "
                "{clone_storage_bytes}, base freed: {base_freed_after_clone}.",
                keep=keep,
                slice_storage_bytes=ctx.size(cpu["slice_storage_bytes"]),
                base_freed_after_del=cpu["base_freed_after_del"],
                clone_storage_bytes=ctx.size(cpu["clone_storage_bytes"]),
                base_freed_after_clone=cpu["base_freed_after_clone"],
            )
        )
    elif ctx.simulate:
        # A simulated run does not load torch (the fork server skips the slow import).
        lines.append(
            t(
                "CPU torch check: skipped in a simulated run (torch not loaded); a run "
                "without `--simulate` includes it."
            )
        )
    else:
        lines.append(t("CPU torch check: n/a (torch not installed: pip install 'quizbot[gpu]')."))
    lines += [
        f"- `{s['step']}` → "
        + t(
            "allocated {allocated_bytes}, reserved {reserved_bytes}",
            allocated_bytes=ctx.size(s["allocated_bytes"]),
            reserved_bytes=ctx.size(s["reserved_bytes"]),
        )
        for s in steps
    ]
    lines.append(
        t(
            "A slice is a view: it shares the base's storage, so the allocator block "
            "stays allocated. `.clone()` copies just the slice into a small block of "
            "its own."
        )
    )
    fig, (ax,) = _plot.figure(8.0, 3.4)
    _plot.grouped_bars(
        ax,
        [
            "base = empty(n)",
            "head = base[:k]\ndel base",
            "fixed = head.clone()\ndel head",
            "empty_cache()",
        ],
        [
            _plot.mib_series(t("allocated"), steps, "allocated_bytes", _plot.ALLOCATED),
            _plot.mib_series(t("reserved"), steps, "reserved_bytes", _plot.FREE),
        ],
        ylabel=t("memory (MiB)"),
        fmt=lambda v: ctx.size(v * MiB) if v else "0",
        title=t(
            "A {keep} slice keeps its {base_bytes} base allocated; a clone does not",
            keep=ctx.size(keep),
            base_bytes=ctx.size(base_bytes),
        ),
    )
    _plot.number_ticks(ax, ctx.locale)
    return ctx.output(ctx.t("A view keeps the whole storage alive"), lines, metrics, fig, label)


DEMO = Demo(
    id="view-keeps-storage",
    title="A slice keeps the whole storage alive",
    kind=DemoKind.ALLOCATOR,
    run=run,
    params=(
        Param("base_mib", int, 4, 1024, 64, "size of the base tensor, MiB"),
        Param("slice_kib", int, 1, 1024, 1, "size of the slice kept, KiB"),
    ),
)
