"""CUDA graphs keep a private memory pool.

Tensors allocated while a graph is captured come from a pool that belongs to the graph:
replays reuse the same addresses, so that memory stays reserved for as long as the graph
lives, even after the Python outputs are gone, and ordinary allocations cannot use it.
On a GPU this is measured; without one the pool is modelled with a second simulated
allocator (the simulator has no graph pools), clearly labelled.
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Mapping
from typing import Any

from bot.i18n import N_
from gpu_runner.demos import _plot
from gpu_runner.demos._alloc import SimDevice
from gpu_runner.demos._context import DemoOutput, RunContext, RunKind
from gpu_runner.demos._labels import gpu_check_clause
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20
POOL_PREFIX = "reserved_bytes_by_private_pools."
POOL_SUFFIX = ".all.current"


def private_pool_bytes(stats: Mapping[str, int]) -> int | None:
    """Bytes reserved by private pools (CUDA graphs, MemPools) from `memory_stats()`.

    torch 2.13 flattens ``reserved_bytes_by_private_pools[(id0, id1)]`` into
    ``reserved_bytes_by_private_pools.<id0>_<id1>.{all,large_pool,small_pool}.<metric>``:
    `all` already sums the two pools, so only the `.all.current` keys count. None when the
    torch has no such statistic (before 2.13).
    """
    keys = [k for k in stats if k.startswith(POOL_PREFIX) and k.endswith(POOL_SUFFIX)]
    return sum(int(stats[k]) for k in keys) if keys else None


def measure_cuda(torch: Any, size: int) -> list[dict[str, Any]]:
    n = size // 4

    def step(x: Any) -> Any:
        y = x * 2  # intermediates: allocated during capture, from the graph's pool
        z = y + 1
        return z.relu()

    steps: list[dict[str, Any]] = []

    def record(name: str) -> None:
        torch.cuda.synchronize()
        private = private_pool_bytes(torch.cuda.memory_stats())
        steps.append(
            {
                "step": name,
                "reserved_bytes": int(torch.cuda.memory_reserved()),
                "allocated_bytes": int(torch.cuda.memory_allocated()),
                "private_pool_bytes": private,
            }
        )

    static_x = torch.randn(n, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the graph, as the docs ask
        for _ in range(3):
            step(static_x)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.empty_cache()
    record(N_("before capture"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step(static_x)
    record(N_("after capture"))
    graph.replay()
    del out
    record(N_("del output"))
    other = torch.empty(n, device="cuda")
    record(N_("new tensor, same size"))
    del graph
    gc.collect()
    torch.cuda.empty_cache()
    record(N_("del graph; empty_cache()"))
    del other, static_x
    return steps


def model_sim(size: int) -> list[dict[str, Any]]:
    """Two simulated pools: the default one and the graph's private one."""
    default, pool = SimDevice(), SimDevice()
    steps: list[dict[str, Any]] = []

    def record(name: str, graph_alive: bool = True) -> None:
        private = pool.reserved() if graph_alive else 0
        steps.append(
            {
                "step": name,
                "reserved_bytes": default.reserved() + private,
                "allocated_bytes": default.allocated() + pool.allocated(),
                "private_pool_bytes": private,
            }
        )

    static_x = default.alloc(size)
    record(N_("before capture"))
    y, z = pool.alloc(size), pool.alloc(size)
    out = pool.alloc(size)
    pool.free(y)
    pool.free(z)  # back to the graph's pool, not to the default one
    record(N_("after capture"))
    pool.free(out)
    record(N_("del output"))
    other = default.alloc(size)  # cannot use the private pool's free blocks
    record(N_("new tensor, same size"))
    pool.empty_cache()
    default.empty_cache()
    record(N_("del graph; empty_cache()"), graph_alive=False)
    default.free(other)
    default.free(static_x)
    return steps


def run(ctx: RunContext) -> DemoOutput:
    size = ctx.int("size_mib") * MiB
    simulated = not ctx.cuda
    steps = model_sim(size) if simulated else measure_cuda(ctx.require_torch(), size)
    metrics = {"size_bytes": size, "steps": steps, "simulated": simulated}
    t = ctx.t
    label = ctx.label(RunKind.SIMULATED if simulated else RunKind.GPU)
    if simulated:
        clause = gpu_check_clause(ctx.locale)
        label = dataclasses.replace(
            label,
            note=t(
                "_Simulated model: the graph's pool is a second simulated allocator with "
                "the same rules (the simulator has no graph pools); nothing was "
                "captured. The bytes follow CUDACachingAllocator's rules; {clause}._",
                clause=clause,
            ),
            plot_note=t(
                "simulated model (a second allocator stands for the graph's pool); {clause}",
                clause=clause,
            ),
        )

    def pool_text(s: dict[str, Any]) -> str:
        p = s["private_pool_bytes"]
        return (
            ""
            if p is None
            else t(
                ", graph pool {p}",
                p=ctx.mib(p),
            )
        )

    kept = max((s["private_pool_bytes"] or 0) for s in steps)
    lines = [
        t(
            "`out = relu(x * 2 + 1)` captured with `torch.cuda.graph`, x of {size}:",
            size=ctx.mib(size),
        ),
        *[
            f"- `{t(s['step'])}` → "
            + t(
                "reserved {reserved_bytes}, allocated {allocated_bytes}{pool_text}",
                reserved_bytes=ctx.mib(s["reserved_bytes"]),
                allocated_bytes=ctx.mib(s["allocated_bytes"]),
                pool_text=pool_text(s),
            )
            for s in steps
        ],
        t(
            "Replays reuse the captured addresses, so the pool stays reserved while "
            "the graph lives — even with no live output — and ordinary tensors "
            "cannot use it. Free the graph (then `empty_cache()`), or share one pool "
            "between graphs (`graph_pool_handle()`)."
        ),
    ]
    fig, (ax,) = _plot.figure(8.0, 3.6)
    _plot.grouped_bars(
        ax,
        [t(s["step"]).replace("; ", ";\n").replace(", ", ",\n") for s in steps],
        [
            _plot.mib_series(t("reserved"), steps, "reserved_bytes", _plot.FREE),
            _plot.mib_series(t("allocated"), steps, "allocated_bytes", _plot.ALLOCATED),
            _plot.mib_series(t("graph pool"), steps, "private_pool_bytes", _plot.ACCENT),
        ],
        ylabel=t("memory (MiB)"),
        fmt=lambda v: ctx.num(v),
        title=t(
            "The graph keeps its {kept} pool reserved, output or not, until it is deleted",
            kept=ctx.mib(kept),
        ),
    )
    _plot.number_ticks(ax, ctx.locale)
    return ctx.output(ctx.t("CUDA graphs keep a private memory pool"), lines, metrics, fig, label)


DEMO = Demo(
    id="cuda-graph-pool",
    title="CUDA graphs keep a private memory pool",
    kind=DemoKind.ALLOCATOR,
    run=run,
    params=(Param("size_mib", int, 16, 1024, 64, "size of the input and each intermediate"),),
)
