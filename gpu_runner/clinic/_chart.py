"""The clinic's PNG: reserved and allocated memory over the trace, OOMs marked.

matplotlib's object API on an Agg canvas (no pyplot state), imported only in the runner's
child; no ``Software`` chunk, so the same input gives the same bytes.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence

from bot import formats
from gpu_runner.clinic._program import TraceProgram
from gpu_runner.clinic._text import Words
from gpu_runner.clinic._verdict import Tried

MiB = 1 << 20
GiB = 1 << 30
DPI = 160
COLOURS = ("#8C8C8C", "#4C72B0")  # recorded, the other configuration
OOM_MARKERS = ("x", "+")
OOM_COLOUR = "#C44E52"


def render_png(
    program: TraceProgram,
    series: Sequence[tuple[str, Tried]],
    *,
    title: str,
    gpu_memory: int,
    w: Words,
) -> bytes:
    """One reserved (solid) and one allocated (dashed) line per `(name, tried)`."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    top = max(max(run.reserved, default=0) for _, (_, run) in series)
    show_gpu = top >= gpu_memory // 2
    scale, unit = (
        (GiB, "GiB") if max(top, gpu_memory if show_gpu else 0) >= 4 * GiB else (MiB, "MiB")
    )
    fig = Figure(figsize=(9.0, 4.8), dpi=DPI)
    ax = fig.add_subplot(1, 1, 1)
    xs = program.xs
    for (name, (_, run)), colour, marker in zip(series, COLOURS, OOM_MARKERS, strict=False):
        n = len(run.reserved)
        ax.plot(
            xs[:n],
            [v / scale for v in run.reserved],
            color=colour,
            linewidth=1.4,
            label=w.t("reserved · {name}", name=name),
        )
        ax.plot(
            xs[:n],
            [v / scale for v in run.allocated],
            color=colour,
            linewidth=1.0,
            linestyle="--",
            label=w.t("allocated · {name}", name=name),
        )
        if run.oom_ops:
            points = [min(op // program.bucket, n - 1) for op in run.oom_ops]
            ax.scatter(
                [xs[p] for p in points],
                [run.reserved[p] / scale for p in points],
                marker=marker,
                color=OOM_COLOUR,
                s=40,
                zorder=3,
                label=f"OOM · {name} ({run.ooms})",
            )
    if show_gpu:
        ax.axhline(
            gpu_memory / scale,
            color=OOM_COLOUR,
            linestyle=":",
            linewidth=1.0,
            label=w.t("GPU memory {size}", size=w.gib(gpu_memory)),
        )
    ax.set_xlabel(
        w.t("time since the first event (s)")
        if program.x_is_time
        else w.t("allocator call (event number)")
    )
    ax.set_ylabel(w.t("memory ({unit})", unit=unit))
    ax.set_ylim(bottom=0)
    # Tick numbers in the member's locale (a decimal comma in Greek), not matplotlib's.
    ticks = FuncFormatter(lambda v, _pos: formats.trimmed(v, w.locale, 3, group_from=10_000))
    ax.xaxis.set_major_formatter(ticks)
    ax.yaxis.set_major_formatter(ticks)
    ax.set_title("\n".join(textwrap.wrap(title, 90)), fontsize=10, loc="left")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=7, framealpha=0.85)
    fig.tight_layout()
    buf = io.BytesIO()
    # dpi given: rcParams may carry another process-wide default (a demo's, in one child).
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()
