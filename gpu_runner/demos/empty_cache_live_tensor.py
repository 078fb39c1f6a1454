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
from gpu_runner.demos._alloc import Device, device_label, open_device, stat, usage
from gpu_runner.demos._context import DemoOutput, RunContext
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20


def _state(dev: Device, step: str, base_free: int | None) -> dict[str, Any]:
    free = dev.mem_free()
    return {
        "step": step,
        **usage(dev),
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


def storage_part(torch: Any, size: int) -> dict[str, Any]:
    """Plain CPU torch, `x` as large as on the device (never touched, so never paged in):
    the storage dies only when the last view does."""
    x = torch.empty(size, dtype=torch.uint8)
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
    cpu = storage_part(ctx.torch, size) if ctx.torch is not None and dev.simulated else None
    metrics = {
        "size_bytes": size,
        "view": view_steps,
        "shared_segment": shared_steps,
        "cpu_storage": cpu,
        "simulated": dev.simulated,
    }
    label = device_label(ctx, dev, cpu_check=cpu is not None)
    t = ctx.t

    def row(s: dict[str, Any]) -> str:
        delta = s["device_free_delta_bytes"]
        free = "n/a" if delta is None else ctx.mib(delta, signed=True)
        return f"- `{s['step']}` → " + t(
            "allocated {allocated}, reserved {reserved}, ∆ free (`mem_get_info`) since "
            "the start {free}",
            allocated=ctx.mib(s["allocated_bytes"]),
            reserved=ctx.mib(s["reserved_bytes"]),
            free=free,
        )

    kept = shared_steps[1]
    lines = [
        t(
            "`x` is {size} of uint8; `v = x[:16]` is a 16-byte view of it:",
            size=ctx.size(size),
        ),
        *[row(s) for s in view_steps],
        t(
            "Two 4 MiB tensors in one 20 MiB segment: freeing one + `empty_cache()` "
            "keeps reserved {reserved_bytes}, its free {inactive_split_bytes} "
            "included (inactive split); after the second, {reserved_bytes_2}.",
            reserved_bytes=ctx.mib(kept["reserved_bytes"]),
            inactive_split_bytes=ctx.mib(kept["inactive_split_bytes"]),
            reserved_bytes_2=ctx.mib(shared_steps[2]["reserved_bytes"]),
        ),
    ]
    if cpu is not None:
        lines.append(
            t(
                "CPU torch check, `x` of {size} on the CPU: after `del x` the storage is "
                "{after_del_x} (the 16-byte view's storage is {view_storage}, all of "
                "`x`); after `del v` it is {after_del_v} (`weakref.finalize`).",
                size=ctx.size(size),
                after_del_x=_state_word(ctx, cpu["freed_after_del_x"]),
                view_storage=ctx.size(cpu["view_storage_bytes"]),
                after_del_v=_state_word(ctx, cpu["freed_after_del_v"]),
            )
        )
    lines.append(
        t(
            "`empty_cache()` releases only segments whose blocks are all free: it "
            "never frees a tensor, a view keeps its base's whole block, and a free "
            "block that shares a segment with a live one stays reserved."
        )
    )
    fig, (ax,) = _plot.figure(8.0, 3.4)
    _plot.grouped_bars(
        ax,
        ["x = empty(size)", "v = x[:16]\ndel x\nempty_cache()", "del v", "empty_cache()"],
        [
            _plot.mib_series(t("allocated"), view_steps, "allocated_bytes", _plot.ALLOCATED),
            _plot.mib_series(t("reserved"), view_steps, "reserved_bytes", _plot.FREE),
        ],
        ylabel=t("memory (MiB)"),
        fmt=lambda v: ctx.num(v),
        title=t(
            "A 16-byte view keeps {size} until del v; only then can empty_cache() release it",
            size=ctx.mib(size),  # as the report's rows say it
        ),
    )
    _plot.number_ticks(ax, ctx.locale)
    return ctx.output(
        ctx.t("empty_cache() does not free a live tensor"), lines, metrics, fig, label
    )


def _state_word(ctx: RunContext, freed: bool) -> str:
    if freed:
        return ctx.t.pgettext("a storage after del", "freed")
    return ctx.t.pgettext("a storage after del", "alive")


DEMO = Demo(
    id="empty-cache-live-tensor",
    title="empty_cache() does not free a live tensor",
    kind=DemoKind.ALLOCATOR,
    run=run,
    params=(Param("size_mib", int, 16, 4096, 1024, "size of x, MiB"),),
)
