"""Pinned vs pageable host memory, what ``non_blocking=True`` does, and what it does not.

From pageable memory a host-to-device copy goes through a pinned staging buffer and the
call returns only when the data is on its way; from pinned (page-locked) memory the DMA
engine reads the buffer directly, so ``copy_(non_blocking=True)`` returns at once. The copy
still runs in order on its stream: it overlaps compute only when issued on a side stream.
On a GPU all three are measured; without CUDA the demo explains and checks whether pinning
is available here at all.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence
from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._context import DemoOutput, RunContext
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20
REPEATS = 5
MATMUL = 4096  # square fp32 matmuls as the "compute" the copy should hide behind


def copy_figures(
    size: int, total_s: Sequence[float], returned_s: Sequence[float]
) -> dict[str, Any]:
    """Bandwidth and the call's return time from timed copies (medians of the repeats)."""
    total, returned = statistics.median(total_s), statistics.median(returned_s)
    return {
        "gb_per_s": round(size / total / 1e9, 2),
        "call_returns_us": round(returned * 1e6, 1),
        "copy_ms": round(total * 1e3, 3),
    }


def overlap_figures(
    copy_ms: float, compute_ms: float, same_stream_ms: float, side_stream_ms: float
) -> dict[str, float]:
    """How much of the shorter of copy and compute a side stream hides (0 = none, 1 = all)."""
    serial = copy_ms + compute_ms
    hidden = (serial - side_stream_ms) / min(copy_ms, compute_ms)
    return {
        "copy_ms": round(copy_ms, 3),
        "compute_ms": round(compute_ms, 3),
        "same_stream_ms": round(same_stream_ms, 3),
        "side_stream_ms": round(side_stream_ms, 3),
        "hidden_fraction": round(min(1.0, max(0.0, hidden)), 3),
    }


def _timed(torch: Any, fn: Any) -> float:
    """Median wall time of `fn` to completion on the device, seconds."""
    times = []
    for _ in range(REPEATS):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(torch: Any, size: int) -> dict[str, Any]:
    pageable = torch.empty(size, dtype=torch.uint8)
    pinned = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    dst = torch.empty(size, dtype=torch.uint8, device="cuda")
    out: dict[str, Any] = {}
    for name, src in (("pageable", pageable), ("pinned", pinned)):
        dst.copy_(src)  # warm-up
        torch.cuda.synchronize()
        totals, returns = [], []
        for _ in range(REPEATS):
            start = time.perf_counter()
            dst.copy_(src, non_blocking=True)
            returns.append(time.perf_counter() - start)  # when control came back
            torch.cuda.synchronize()
            totals.append(time.perf_counter() - start)
        out[name] = copy_figures(size, totals, returns)
    a = torch.randn(MATMUL, MATMUL, device="cuda")
    one_mm = _timed(torch, lambda: a @ a)
    reps = max(1, math.ceil(out["pinned"]["copy_ms"] / 1e3 / one_mm))
    side = torch.cuda.Stream()

    def compute() -> None:
        for _ in range(reps):
            a @ a

    def same_stream() -> None:
        dst.copy_(pinned, non_blocking=True)
        compute()

    def side_stream() -> None:
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            dst.copy_(pinned, non_blocking=True)
        compute()
        torch.cuda.current_stream().wait_stream(side)

    out["overlap"] = {
        **overlap_figures(
            out["pinned"]["copy_ms"],
            _timed(torch, compute) * 1e3,
            _timed(torch, same_stream) * 1e3,
            _timed(torch, side_stream) * 1e3,
        ),
        "matmuls": reps,
    }
    return out


def pin_available(torch: Any) -> tuple[bool, str]:
    try:
        torch.empty(16).pin_memory()
    except RuntimeError as exc:
        return False, str(exc).splitlines()[0]
    return True, ""


def run(ctx: RunContext) -> DemoOutput:
    size = ctx.int("size_mib") * MiB
    t = ctx.t
    torch = ctx.torch
    if torch is None:
        available, why = False, "torch not installed (pip install 'quizbot[gpu]')"
    else:
        available, why = pin_available(torch)
    copies = measure(torch, size) if ctx.cuda else None
    metrics: dict[str, Any] = {
        "size_bytes": size,
        "pin_memory_available": available,
        "pin_memory_error": why,
        "copies": copies,
        "simulated": False,  # nothing here is simulated: measured on a GPU, or nothing
    }
    label = ctx.torch_label(
        torch is not None,
        cpu_note=ctx.t(
            "no GPU here: no copy was timed; only pin_memory()'s availability was checked"
        ),
    )
    lines = [
        *(_measured_lines(ctx, size, copies) if copies is not None else []),
    ]
    if copies is None:
        if torch is None:
            why = t("torch not installed: pip install 'quizbot[gpu]'")
        elif why:
            why = f"`{why}`"  # torch's own message
        lines.append(
            t(
                "No GPU here: copy timings n/a. `pin_memory()` available: {available}{why}.",
                available=t("yes") if available else t("no"),
                why=f" ({why})" if why else "",
            )
        )
    lines += [
        t(
            "- pageable memory can be swapped out, so the driver first copies it "
            "into a pinned staging buffer, and `copy_(non_blocking=True)` returns "
            "only once that CPU copy is done."
        ),
        t(
            "- pinned memory is page-locked: the GPU's DMA engine reads it directly "
            "and the call returns at once. The copy still runs in order on its "
            "stream — the next kernel on the same stream waits for it. To overlap it "
            "with compute, issue it on a side stream: `with torch.cuda.stream(s): "
            "x.copy_(src, non_blocking=True)`, then "
            "`torch.cuda.current_stream().wait_stream(s)` before using `x`."
        ),
        t(
            "- `DataLoader(pin_memory=True)` + `.to('cuda', non_blocking=True)` is "
            "the usual pairing; pin too much and the host runs short of RAM."
        ),
    ]
    if copies is not None:
        fig, axes = _plot.figure(9.0, 3.4, cols=3)
        _measured_plot(ctx, axes, copies)
    else:
        fig, (ax,) = _plot.figure(8.0, 3.2)
        _schematic(ax, ctx)
    return ctx.output(ctx.t("Pinned vs pageable host memory"), lines, metrics, fig, label)


def _measured_lines(ctx: RunContext, size: int, copies: dict[str, Any]) -> list[str]:
    t = ctx.t
    pg, pn, ov = copies["pageable"], copies["pinned"], copies["overlap"]
    return [
        t(
            "Host → GPU, {size}, `copy_(non_blocking=True)`:",
            size=ctx.mib(size),
        ),
        t(
            "- pageable: {gb_per_s} GB/s; the call returns after {call_returns_us} "
            "µs (staged through a pinned buffer)",
            gb_per_s=ctx.num(pg["gb_per_s"], 1),
            call_returns_us=ctx.num(pg["call_returns_us"], 1),
        ),
        t(
            "- pinned: {gb_per_s} GB/s; the call returns after {call_returns_us} µs "
            "(asynchronous DMA)",
            gb_per_s=ctx.num(pn["gb_per_s"], 1),
            call_returns_us=ctx.num(pn["call_returns_us"], 1),
        ),
        t(
            "- pinned copy ({copy_ms} ms) + {matmuls} matmuls ({compute_ms} ms): "
            "same stream {same_stream_ms} ms, side stream {side_stream_ms} ms "
            "({hidden_fraction} of the shorter one hidden)",
            copy_ms=ctx.num(ov["copy_ms"], 2),
            matmuls=ov["matmuls"],
            compute_ms=ctx.num(ov["compute_ms"], 2),
            same_stream_ms=ctx.num(ov["same_stream_ms"], 2),
            side_stream_ms=ctx.num(ov["side_stream_ms"], 2),
            hidden_fraction=ctx.pct(ov["hidden_fraction"], 0),
        ),
    ]


def _measured_plot(ctx: RunContext, axes: Any, copies: dict[str, Any]) -> None:
    t = ctx.t
    pg, pn, ov = copies["pageable"], copies["pinned"], copies["overlap"]
    _plot.grouped_bars(
        axes[0],
        ["pageable", "pinned"],
        [("GB/s", [pg["gb_per_s"], pn["gb_per_s"]], _plot.ALLOCATED)],
        ylabel="GB/s",
        fmt=lambda v: ctx.num(v, 1),
        title=t("Bandwidth"),
    )
    _plot.grouped_bars(
        axes[1],
        ["pageable", "pinned"],
        [("µs", [pg["call_returns_us"], pn["call_returns_us"]], _plot.FREE)],
        ylabel=t("µs until copy_() returns (log)"),
        fmt=lambda v: ctx.num(v, 1),
        title=t("When the call returns"),
    )
    axes[1].set_yscale("log")
    _plot.grouped_bars(
        axes[2],
        [
            t("same\nstream"),
            t("side\nstream"),
        ],
        [("ms", [ov["same_stream_ms"], ov["side_stream_ms"]], _plot.ACCENT)],
        ylabel=t("ms, copy + compute"),
        fmt=lambda v: ctx.num(v, 2),
        title=t("Overlap needs a side stream"),
    )
    _plot.mark_level(
        axes[2],
        ov["copy_ms"] + ov["compute_ms"],
        t("copy + compute, serial"),
        colour=_plot.MUTED,
    )
    fig = axes[0].figure
    fig.suptitle(
        t(
            "Pinned: {gb_per_s} GB/s and copy_() returns in {call_returns_us} µs; "
            "overlap only on a side stream",
            gb_per_s=ctx.num(pn["gb_per_s"], 1),
            call_returns_us=ctx.num(pn["call_returns_us"], 0),
        ),
        fontsize=10,
        fontweight="bold",
    )


def _schematic(ax: Any, ctx: RunContext) -> None:
    """The two copy paths as boxes and arrows (nothing measured)."""
    t = ctx.t
    rows = (
        (
            1.0,
            [
                t("pageable\nhost buffer"),
                t("pinned\nstaging"),
                "GPU",
            ],
            [
                t("CPU copy"),
                "DMA",
            ],
        ),
        (
            0.0,
            [
                t("pinned\nhost buffer"),
                "GPU",
            ],
            [t("DMA (async)")],
        ),
    )
    for y, boxes, arrows in rows:
        xs = [0.1 + i * 0.4 for i in range(len(boxes))]
        for x, label in zip(xs, boxes, strict=True):
            ax.text(
                x,
                y,
                label,
                ha="center",
                va="center",
                fontsize=9,
                bbox={"boxstyle": "round", "fc": "#EAEAF2", "ec": _plot.MUTED},
            )
        for i, label in enumerate(arrows):
            ax.annotate(
                "",
                xy=(xs[i + 1] - 0.09, y),
                xytext=(xs[i] + 0.09, y),
                arrowprops={"arrowstyle": "->", "color": _plot.FREE},
            )
            ax.text((xs[i] + xs[i + 1]) / 2, y + 0.18, label, ha="center", fontsize=8)
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.5, 1.5)
    ax.axis("off")
    ax.set_title(
        t("Pageable copies are staged; pinned ones go by DMA (no GPU here: nothing measured)"),
    )
    ax.text(
        0.5,
        -0.45,
        t(
            "non_blocking=True returns at once from pinned memory; overlap with "
            "compute needs a side stream"
        ),
        ha="center",
        fontsize=8.5,
        color=_plot.LIMIT,
    )


DEMO = Demo(
    id="pinned-vs-pageable",
    title="Pinned vs pageable host memory and non_blocking copies",
    kind=DemoKind.MIXED,
    run=run,
    params=(Param("size_mib", int, 16, 1024, 256, "bytes copied to the GPU, MiB"),),
)
