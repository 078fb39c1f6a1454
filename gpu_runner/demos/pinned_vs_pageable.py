"""Pinned vs pageable host memory, and what ``non_blocking=True`` really does.

A host-to-device copy from pageable memory goes through a pinned staging buffer and the
call returns only when the data is on its way; from pinned (page-locked) memory the DMA
engine reads the buffer directly, so ``copy_(non_blocking=True)`` returns at once and the
copy overlaps compute. Without CUDA there is nothing to time: the demo explains and checks
whether pinning is available here at all.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._context import DemoOutput, RunContext, title_line
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20


def measure(torch: Any, size: int) -> dict[str, Any]:
    pageable = torch.empty(size, dtype=torch.uint8)
    pinned = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    dst = torch.empty(size, dtype=torch.uint8, device="cuda")
    out: dict[str, Any] = {}
    for name, src in (("pageable", pageable), ("pinned", pinned)):
        dst.copy_(src)  # warm-up
        torch.cuda.synchronize()
        times, returns = [], []
        for _ in range(5):
            start = time.perf_counter()
            dst.copy_(src, non_blocking=True)
            returns.append(time.perf_counter() - start)  # when control came back
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        out[name] = {
            "gb_per_s": round(size / statistics.median(times) / 1e9, 2),
            "call_returns_us": round(statistics.median(returns) * 1e6, 1),
            "copy_ms": round(statistics.median(times) * 1e3, 3),
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
    t = ctx.tr
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
        "simulated": copies is None,
    }
    lines = [
        title_line(
            ctx,
            "Pinned vs pageable host memory",
            "Pinned έναντι pageable μνήμης του host",
            copies is None,
        )
    ]
    if copies is not None:
        pg, pn = copies["pageable"], copies["pinned"]
        lines += [
            t(
                f"Host → GPU, {size // MiB} MiB, `copy_(non_blocking=True)`:",
                f"Host → GPU, {size // MiB} MiB, `copy_(non_blocking=True)`:",
            ),
            t(
                f"- pageable: {pg['gb_per_s']} GB/s, the call returns after "
                f"{pg['call_returns_us']} µs (staged through a pinned buffer)",
                f"- pageable: {pg['gb_per_s']} GB/s, η κλήση επιστρέφει σε "
                f"{pg['call_returns_us']} µs (περνά από ενδιάμεσο pinned buffer)",
            ),
            t(
                f"- pinned: {pn['gb_per_s']} GB/s, the call returns after "
                f"{pn['call_returns_us']} µs (asynchronous DMA)",
                f"- pinned: {pn['gb_per_s']} GB/s, η κλήση επιστρέφει σε "
                f"{pn['call_returns_us']} µs (ασύγχρονο DMA)",
            ),
        ]
    else:
        lines.append(
            t(
                f"No GPU here: copy timings n/a. `pin_memory()` available: {available}"
                + (f" ({why})" if why else "")
                + ".",
                f"Δεν υπάρχει GPU εδώ: χρόνοι αντιγραφής n/a. Διαθέσιμο `pin_memory()`: "
                f"{available}" + (f" ({why})" if why else "") + ".",
            )
        )
    lines += [
        t(
            "- pageable memory can be swapped out, so the driver first copies it into a pinned "
            "staging buffer; `non_blocking=True` cannot overlap that CPU copy.",
            "- η pageable μνήμη μπορεί να μεταφερθεί στο swap, οπότε ο οδηγός (driver) την "
            "αντιγράφει πρώτα σε pinned buffer· το `non_blocking=True` δεν επικαλύπτει αυτή "
            "την αντιγραφή στη CPU.",
        ),
        t(
            "- pinned memory is page-locked: the GPU's DMA engine reads it directly, the copy "
            "runs on the stream and overlaps compute. `DataLoader(pin_memory=True)` + "
            "`.to('cuda', non_blocking=True)` is the usual pairing; pin too much and the host "
            "runs short of RAM.",
            "- η pinned μνήμη είναι κλειδωμένη στη RAM: η μηχανή DMA της GPU τη διαβάζει "
            "απευθείας, η αντιγραφή τρέχει στη ροή (stream) και επικαλύπτεται με υπολογισμούς. "
            "Συνήθως `DataLoader(pin_memory=True)` + `.to('cuda', non_blocking=True)`· "
            "πολλή pinned μνήμη στερεί RAM από τον host.",
        ),
    ]

    fig, (ax,) = _plot.figure(8.0, 3.0)
    if copies is not None:
        _plot.grouped_bars(
            ax,
            ["pageable", "pinned"],
            [
                (
                    "GB/s",
                    [copies["pageable"]["gb_per_s"], copies["pinned"]["gb_per_s"]],
                    _plot.ALLOCATED,
                )
            ],
            ylabel="GB/s",
            fmt="{:.1f}",
            title=t("Host → GPU bandwidth", "Εύρος ζώνης host → GPU"),
        )
    else:
        _schematic(ax, ctx)
    return DemoOutput(
        "\n".join(lines), metrics, _plot.to_png(fig), ctx.device_line(), copies is None
    )


def _schematic(ax: Any, ctx: RunContext) -> None:
    """The two copy paths as boxes and arrows (nothing measured)."""
    t = ctx.tr
    rows = (
        (
            1.0,
            [
                t("pageable\nhost buffer", "pageable\nbuffer host"),
                t("pinned\nstaging", "pinned\nενδιάμεσο"),
                "GPU",
            ],
            [t("CPU copy", "αντιγραφή CPU"), "DMA"],
        ),
        (
            0.0,
            [t("pinned\nhost buffer", "pinned\nbuffer host"), "GPU"],
            [t("DMA (async)", "DMA (ασύγχρονο)")],
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
        t(
            "Two paths to the GPU (no GPU here: nothing measured)",
            "Δύο δρόμοι προς τη GPU (χωρίς GPU: καμία μέτρηση)",
        ),
        fontsize=10,
    )


DEMO = Demo(
    id="pinned-vs-pageable",
    title="Pinned vs pageable host memory and non_blocking copies",
    title_el="Pinned έναντι pageable μνήμης και αντιγραφές non_blocking",
    kind=DemoKind.MIXED,
    run=run,
    params=(Param("size_mib", int, 16, 1024, 256, "bytes copied to the GPU, MiB"),),
)
