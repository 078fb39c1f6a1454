"""Q7 — empty_cache() does not free memory that a live tensor (or view) still uses.

`x` of 1 GiB, a 16-byte view `v = x[:16]`, `del x`: the view keeps the block, so
`empty_cache()` releases nothing until `v` goes too. Second part: two 4 MiB tensors share
one 20 MiB segment; the segment is released only when both are gone.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._alloc import Device, device_label, open_device, stat
from gpu_runner.demos._context import DemoOutput, RunContext
from gpu_runner.demos._registry import Demo, DemoKind, Param
from gpu_runner.demos._units import format_signed_mib

MiB = 1 << 20


def _state(dev: Device, step: str, base_free: int | None) -> dict[str, Any]:
    free = dev.mem_free()
    return {
        "step": step,
        "allocated_bytes": dev.allocated(),
        "reserved_bytes": dev.reserved(),
        # The driver's view; the simulator models it too, but a GPU has other tenants.
        "device_free_delta_bytes": None if free is None or base_free is None else free - base_free,
    }


def view_part(dev: Device, size: int) -> list[dict[str, Any]]:
    base_free = dev.mem_free()
    steps = []
    x = dev.alloc(size)
    steps.append(_state(dev, "x = empty(size)", base_free))
    v = dev.view(x)
    dev.free(x)
    dev.empty_cache()
    steps.append(_state(dev, "v = x[:16]; del x; empty_cache()", base_free))
    dev.free(v)
    steps.append(_state(dev, "del v", base_free))
    dev.empty_cache()
    steps.append(_state(dev, "empty_cache()", base_free))
    return steps


def shared_segment_part(dev: Device) -> list[dict[str, Any]]:
    a, b = dev.alloc(4 * MiB), dev.alloc(4 * MiB)
    steps = [
        {
            "step": "a, b = 2 × 4 MiB",
            "reserved_bytes": dev.reserved(),
            "inactive_split_bytes": stat(dev.stats(), "inactive_split_bytes.all.current"),
        }
    ]
    dev.free(a)
    dev.empty_cache()
    steps.append(
        {
            "step": "del a; empty_cache()",
            "reserved_bytes": dev.reserved(),
            "inactive_split_bytes": stat(dev.stats(), "inactive_split_bytes.all.current"),
        }
    )
    dev.free(b)
    dev.empty_cache()
    steps.append(
        {
            "step": "del b; empty_cache()",
            "reserved_bytes": dev.reserved(),
            "inactive_split_bytes": stat(dev.stats(), "inactive_split_bytes.all.current"),
        }
    )
    return steps


def storage_part(torch: Any) -> dict[str, Any]:
    """Plain CPU torch: the storage dies only when the last view does."""
    x = torch.empty(16 * MiB, dtype=torch.uint8)
    fired: list[str] = []
    weakref.finalize(x.untyped_storage(), fired.append, "storage freed")
    v = x[:16]
    del x
    gc.collect()
    after_del_x = bool(fired)
    view_storage = int(v.untyped_storage().nbytes())
    del v
    gc.collect()
    return {
        "freed_after_del_x": after_del_x,
        "view_storage_bytes": view_storage,
        "freed_after_del_v": bool(fired),
    }


def run(ctx: RunContext) -> DemoOutput:
    size = ctx.int("size_mib") * MiB
    dev = open_device(ctx)
    view_steps = view_part(dev, size)
    shared_steps = shared_segment_part(dev)
    cpu = storage_part(ctx.torch) if ctx.torch is not None and dev.simulated else None
    metrics = {
        "size_bytes": size,
        "view": view_steps,
        "shared_segment": shared_steps,
        "cpu_storage": cpu,
        "simulated": dev.simulated,
    }
    label = device_label(ctx, dev, cpu_check=cpu is not None)
    t = ctx.tr

    def row(s: dict[str, Any]) -> str:
        delta = s["device_free_delta_bytes"]
        free = "n/a" if delta is None else format_signed_mib(delta, ctx.locale)
        return f"- `{s['step']}` → " + t(
            f"allocated {ctx.mib(s['allocated_bytes'])}, reserved "
            f"{ctx.mib(s['reserved_bytes'])}, Δ free (`mem_get_info`) since the start {free}",
            f"κατανεμημένη (allocated) {ctx.mib(s['allocated_bytes'])}, δεσμευμένη "
            f"(reserved) {ctx.mib(s['reserved_bytes'])}, Δ ελεύθερης (`mem_get_info`) από "
            f"την αρχή {free}",
        )

    kept = shared_steps[1]
    lines = [
        ctx.title(
            "empty_cache() does not free a live tensor",
            "Το empty_cache() δεν αποδεσμεύει ζωντανό τανυστή",
            label,
        ),
        *[row(s) for s in view_steps],
        t(
            f"Two 4 MiB tensors in one 20 MiB segment: freeing one + `empty_cache()` keeps "
            f"reserved {ctx.mib(kept['reserved_bytes'])}, its free "
            f"{ctx.mib(kept['inactive_split_bytes'])} included (inactive split); after the "
            f"second, {ctx.mib(shared_steps[2]['reserved_bytes'])}.",
            f"Δύο τανυστές 4 MiB σε ένα τμήμα 20 MiB: αποδέσμευση του ενός + `empty_cache()` "
            f"αφήνει δεσμευμένα {ctx.mib(kept['reserved_bytes'])}, μαζί τα ελεύθερα "
            f"{ctx.mib(kept['inactive_split_bytes'])} (inactive split)· μετά τον δεύτερο, "
            f"{ctx.mib(shared_steps[2]['reserved_bytes'])}.",
        ),
    ]
    if cpu is not None:
        lines.append(
            t(
                f"CPU torch check: after `del x` the storage is "
                f"{'freed' if cpu['freed_after_del_x'] else 'alive'} (the view's storage is "
                f"{ctx.mib(cpu['view_storage_bytes'])}); after `del v` it is "
                f"{'freed' if cpu['freed_after_del_v'] else 'alive'} (`weakref.finalize`).",
                f"Έλεγχος με torch στη CPU: μετά το `del x` το storage "
                f"{'αποδεσμεύτηκε' if cpu['freed_after_del_x'] else 'ζει'} (το storage της "
                f"όψης είναι {ctx.mib(cpu['view_storage_bytes'])})· μετά το `del v` "
                f"{'αποδεσμεύτηκε' if cpu['freed_after_del_v'] else 'ζει'} (`weakref.finalize`).",
            )
        )
    lines.append(
        t(
            "`empty_cache()` releases only segments whose blocks are all free: it never frees a "
            "tensor, a view keeps its base's whole block, and a free block that shares a "
            "segment with a live one stays reserved.",
            "Το `empty_cache()` αποδεσμεύει μόνο τμήματα που έχουν όλα τα μπλοκ τους ελεύθερα: "
            "δεν αποδεσμεύει ποτέ τανυστή, μια όψη (view) κρατά ολόκληρο το μπλοκ της βάσης, "
            "και ένα ελεύθερο μπλοκ στο ίδιο τμήμα με ζωντανό μένει δεσμευμένο.",
        )
    )
    fig, (ax,) = _plot.figure(8.0, 3.4)
    _plot.grouped_bars(
        ax,
        ["x = empty(n)", "v = x[:16]\ndel x\nempty_cache()", "del v", "empty_cache()"],
        [
            (
                t("allocated", "κατανεμημένη (allocated)"),
                [s["allocated_bytes"] / MiB for s in view_steps],
                _plot.ALLOCATED,
            ),
            (
                t("reserved", "δεσμευμένη (reserved)"),
                [s["reserved_bytes"] / MiB for s in view_steps],
                _plot.FREE,
            ),
        ],
        ylabel=t("memory (MiB)", "μνήμη (MiB)"),
        fmt=lambda v: ctx.num(v),
        title=t(
            f"A 16-byte view keeps {ctx.size(size)} until del v; only then can empty_cache() "
            "release it",
            f"Όψη 16 bytes κρατά {ctx.size(size)} ως το del v· μόνο τότε τα αποδεσμεύει το "
            "empty_cache()",
        ),
    )
    _plot.number_ticks(ax, ctx.locale)
    return ctx.output(lines, metrics, fig, label)


DEMO = Demo(
    id="empty-cache-live-tensor",
    title="empty_cache() does not free a live tensor",
    title_el="Το empty_cache() δεν αποδεσμεύει ζωντανό τανυστή",
    kind=DemoKind.ALLOCATOR,
    run=run,
    params=(Param("size_mib", int, 16, 4096, 1024, "size of x, MiB"),),
)
