"""Q2 — why a caching allocator: reuse cached blocks instead of cudaMalloc/cudaFree calls.

`iterations` × (allocate 64 MiB, free it). With the cache: one cudaMalloc for all of them.
Without it (``caching_allocator_disabled()`` on a GPU; `empty_cache()` after every free in
the simulator) every iteration pays a cudaMalloc and a synchronizing cudaFree.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._alloc import Device, device_label, open_device, stat
from gpu_runner.demos._context import DemoOutput, RunContext
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20


def cached_loop(dev: Device, size: int, n: int, torch: Any) -> dict[str, Any]:
    dev.free(dev.alloc(size))  # warm-up: the one cudaMalloc
    _sync(torch)
    start = time.perf_counter()
    for _ in range(n):
        dev.free(dev.alloc(size))
    _sync(torch)
    elapsed = time.perf_counter() - start
    s = dev.stats()
    return {
        "device_allocs": stat(s, "num_device_alloc"),
        "device_frees": stat(s, "num_device_free"),
        "reserved_bytes": dev.reserved(),
        "us_per_iter": None if dev.simulated else round(elapsed / n * 1e6, 2),
    }


def uncached_loop(dev: Device, size: int, n: int, torch: Any) -> dict[str, Any]:
    dev.empty_cache()  # start without the cached block of the first loop
    if dev.simulated:
        before = dev.stats()
        for _ in range(n):
            dev.free(dev.alloc(size))
            dev.empty_cache()  # no cache: the block goes straight back to the device
        s = dev.stats()
        return {
            "device_allocs": stat(s, "num_device_alloc") - stat(before, "num_device_alloc"),
            "device_frees": stat(s, "num_device_free") - stat(before, "num_device_free"),
            "us_per_iter": None,
        }
    disabled = getattr(torch.cuda.memory, "caching_allocator_disabled", None)
    if disabled is None:  # before torch 2.13 this needs PYTORCH_NO_CUDA_MEMORY_CACHING=1
        return {"device_allocs": None, "device_frees": None, "us_per_iter": None}
    cm: AbstractContextManager[Any] = disabled()
    with cm:
        _sync(torch)
        start = time.perf_counter()
        for _ in range(n):
            x = torch.empty(size, dtype=torch.uint8, device="cuda")
            del x
        _sync(torch)
        elapsed = time.perf_counter() - start
    # Without the cache every tensor is one cudaMalloc and one cudaFree (no stats kept).
    return {"device_allocs": n, "device_frees": n, "us_per_iter": round(elapsed / n * 1e6, 2)}


def _sync(torch: Any) -> None:
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def run(ctx: RunContext) -> DemoOutput:
    n = ctx.int("iterations")
    size = ctx.int("size_mib") * MiB
    dev = open_device(ctx)
    torch = None if dev.simulated else ctx.torch
    cached = cached_loop(dev, size, n, torch)
    uncached = uncached_loop(dev, size, n, torch)
    metrics = {
        "iterations": n,
        "size_bytes": size,
        "cached": cached,
        "uncached": uncached,
        "simulated": dev.simulated,
    }
    label = device_label(ctx, dev)
    t = ctx.t

    def timing(r: dict[str, Any]) -> str:
        if r["us_per_iter"] is None and dev.simulated:
            return t("timing n/a (simulated)")
        if r["us_per_iter"] is None:  # no caching_allocator_disabled() in this torch
            return t("timing n/a (this torch cannot switch the cache off)")
        return f"{ctx.num(r['us_per_iter'], 1)} µs/iter"

    lines = [
        t(
            "{n} × `x = empty({size}); del x`:",
            n=ctx.num(n),
            size=ctx.mib(size),
        ),
        t(
            "- cached: {device_allocs} cudaMalloc, {device_frees} cudaFree, reserved "
            "{reserved_bytes}, {timing}",
            device_allocs=cached["device_allocs"],
            device_frees=cached["device_frees"],
            reserved_bytes=ctx.mib(cached["reserved_bytes"]),
            timing=timing(cached),
        ),
        t(
            "- uncached: {count} cudaMalloc, {count_2} cudaFree, {timing}",
            count=_count(ctx, uncached["device_allocs"]),
            count_2=_count(ctx, uncached["device_frees"]),
            timing=timing(uncached),
        ),
        t(
            "cudaFree synchronizes the device and cudaMalloc is a driver call; the "
            "cache turns both into a free-list lookup on the CPU. That is why "
            "PyTorch keeps freed blocks reserved."
        ),
    ]
    fig, axes = _plot.figure(8.0, 3.4, cols=2 if not dev.simulated else 1)
    _plot.grouped_bars(
        axes[0],
        ["cudaMalloc", "cudaFree"],
        [
            (
                t("cached"),
                [cached["device_allocs"], cached["device_frees"]],
                _plot.ACCENT,
            ),
            (
                t("uncached"),
                [uncached["device_allocs"] or 0, uncached["device_frees"] or 0],
                _plot.FREE,
            ),
        ],
        ylabel=t("device calls"),
        fmt=lambda v: ctx.num(v),
        title=t(
            "{n} tensors: {device_allocs} cudaMalloc with the cache, {count} + "
            "{count_2} calls without",
            n=ctx.num(n),
            device_allocs=cached["device_allocs"],
            count=_count(ctx, uncached["device_allocs"]),
            count_2=_count(ctx, uncached["device_frees"]),
        ),
    )
    _plot.number_ticks(axes[0], ctx.locale)
    if not dev.simulated:
        _plot.grouped_bars(
            axes[1],
            [
                t("cached"),
                t("uncached"),
            ],
            [
                (
                    "µs/iter",
                    [cached["us_per_iter"] or 0, uncached["us_per_iter"] or 0],
                    _plot.ALLOCATED,
                )
            ],
            ylabel=t("µs per allocate + free"),
            fmt=lambda v: ctx.num(v, 1),
            title=t("Time per allocate + free"),
        )
    return ctx.output(ctx.t("Why a caching allocator?"), lines, metrics, fig, label)


def _count(ctx: RunContext, value: int | None) -> str:
    return "n/a" if value is None else ctx.num(value)


DEMO = Demo(
    id="caching-allocator",
    title="Why does PyTorch use a caching allocator?",
    kind=DemoKind.ALLOCATOR,
    run=run,
    params=(
        Param("iterations", int, 10, 5000, 1000, "allocate/free pairs"),
        Param("size_mib", int, 1, 256, 64, "tensor size, MiB"),
    ),
)
