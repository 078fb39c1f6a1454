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
from gpu_runner.demos._alloc import open_device
from gpu_runner.demos._context import DemoOutput, RunContext, simulated_note, size, title_line
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
        steps.append(
            {"step": step, "allocated_bytes": dev.allocated(), "reserved_bytes": dev.reserved()}
        )

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
    t = ctx.tr
    lines = [
        title_line(
            ctx,
            "A view keeps the whole storage alive",
            "Μια όψη (view) κρατά ζωντανό όλο το storage",
            dev.simulated,
        )
    ]
    if cpu is not None:
        lines.append(
            t(
                f"CPU torch: `head = base[:{keep}]`; `del base` → "
                f"`head.untyped_storage().nbytes()` = {cpu['slice_storage_bytes']:,} B, "
                f"base storage freed: {cpu['base_freed_after_del']}. "
                "After `head.clone()` and `del head`: "
                f"{cpu['clone_storage_bytes']:,} B, base freed: {cpu['base_freed_after_clone']}.",
                f"Torch στη CPU: `head = base[:{keep}]`· `del base` → "
                f"`head.untyped_storage().nbytes()` = {cpu['slice_storage_bytes']:,} B, "
                f"αποδεσμεύτηκε η βάση: {cpu['base_freed_after_del']}. Μετά το `head.clone()` και "
                f"`del head`: {cpu['clone_storage_bytes']:,} B, αποδεσμεύτηκε: "
                f"{cpu['base_freed_after_clone']}.",
            )
        )
    else:
        lines.append(
            t(
                "CPU torch check: n/a (torch not installed: pip install 'quizbot[gpu]').",
                "Έλεγχος με torch: n/a (δεν είναι εγκατεστημένο το torch: "
                "pip install 'quizbot[gpu]').",
            )
        )
    lines += [
        f"- `{s['step']}` → allocated {size(s['allocated_bytes'])}, reserved "
        f"{size(s['reserved_bytes'])}"
        for s in steps
    ]
    lines.append(
        t(
            "A slice is a view: it shares the base's storage, so the allocator block stays "
            "allocated. `.clone()` copies just the slice into a small block of its own.",
            "Το slice είναι όψη: μοιράζεται το storage της βάσης, οπότε το μπλοκ μένει "
            "δεσμευμένο. Το `.clone()` αντιγράφει μόνο το κομμάτι σε δικό του μικρό μπλοκ.",
        )
    )
    if dev.simulated:
        lines.append(simulated_note(ctx))

    fig, (ax,) = _plot.figure(8.0, 3.2)
    _plot.grouped_bars(
        ax,
        ["base", "del base", "clone + del", "empty_cache"],
        [
            ("allocated", [s["allocated_bytes"] / MiB for s in steps], _plot.ALLOCATED),
            ("reserved", [s["reserved_bytes"] / MiB for s in steps], _plot.FREE),
        ],
        ylabel="MiB",
        fmt="{:.1f}",
        title=t("A slice pins its base; a clone does not", "Το slice κρατά τη βάση· το clone όχι"),
    )
    return DemoOutput(
        "\n".join(lines), metrics, _plot.to_png(fig), dev.device_line(), dev.simulated
    )


DEMO = Demo(
    id="view-keeps-storage",
    title="A slice keeps the whole storage alive",
    title_el="Ένα slice κρατά ζωντανό όλο το storage",
    kind=DemoKind.ALLOCATOR,
    run=run,
    params=(
        Param("base_mib", int, 4, 1024, 64, "size of the base tensor, MiB"),
        Param("slice_kib", int, 1, 1024, 1, "size of the slice kept, KiB"),
    ),
)
