"""Plot pieces for the demos that show memory step by step (matplotlib, Agg).

Imported only inside a demo's `run`, like `_plot`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpu_runner.demos._plot import ALLOCATED, FREE, MUTED

OOM = "#C44E52"
# One segment as the plots read it: total bytes and its blocks (offset, size, allocated).
Segment = tuple[int, list[tuple[int, int, bool]]]


def stamp(fig: Any, ax: Any, finding: str, device: str, what: str = "") -> None:
    """The finding as the figure's title; under it what the axes show (left) and the
    device line (right)."""
    fig.suptitle(finding, x=0.01, ha="left", fontsize=10.5, fontweight="bold")
    ax.set_title(device, loc="right", fontsize=7.5, color=MUTED)
    if what:
        ax.set_title(what, loc="left", fontsize=8)


def segments_of(snapshot: Sequence[Mapping[str, Any]]) -> list[Segment]:
    """A `memory_snapshot()` (torch's or the simulator's) as `Segment`s, by address."""
    out: list[Segment] = []
    for seg in sorted(snapshot, key=lambda s: int(s["address"])):
        start = int(seg["address"])
        blocks = [
            (int(b["address"]) - start, int(b["size"]), b["state"] != "inactive")
            for b in seg["blocks"]
        ]
        out.append((int(seg["total_size"]), blocks))
    return out


def segment_steps(
    ax: Any,
    steps: Sequence[Sequence[Segment]],
    labels: Sequence[str],
    *,
    scale: int,
    unit: str,
    legend: tuple[str, str],
    ylabel: str,
    oom_steps: Sequence[int] = (),
    oom_label: str = "OOM",
    failed_requests: Sequence[int] = (),
    cap: int | None = None,
    cap_label: str = "",
) -> None:
    """One column per step: its segments stacked in address order, each block coloured
    allocated or free, a thin line between segments; failed steps marked."""
    top = 0.0
    for x, segments in enumerate(steps):
        base = 0.0
        for total, blocks in segments:
            for offset, size, used in blocks:
                ax.bar(
                    x,
                    size / scale,
                    bottom=base + offset / scale,
                    width=0.78,
                    color=ALLOCATED if used else FREE,
                    linewidth=0,
                )
            base += total / scale
            ax.plot([x - 0.39, x + 0.39], [base, base], color="white", linewidth=0.8)
        top = max(top, base)
    if cap is not None and cap / scale <= 1.6 * max(top, 1e-9):
        ax.axhline(cap / scale, color=OOM, linestyle="--", linewidth=1)
        ax.annotate(
            cap_label,
            (0.0, cap / scale),
            xytext=(2, 2),
            textcoords="offset points",
            color=OOM,
            fontsize=7.5,
        )
        top = max(top, cap / scale)
    for x, request in zip(oom_steps, failed_requests, strict=False):
        # The request that did not fit, drawn where it would have gone: above the column.
        height = sum(total for total, _ in steps[x]) / scale
        ax.bar(
            x,
            request / scale,
            bottom=height,
            width=0.78,
            fill=False,
            hatch="///",
            edgecolor=OOM,
            linewidth=0.8,
        )
        top = max(top, height + request / scale)
    for x in oom_steps:
        ax.annotate(
            "OOM",
            (x, 0),
            xytext=(0, 2),
            textcoords="offset points",
            ha="center",
            va="bottom",
            color="white",
            fontsize=6.5,
            fontweight="bold",
            bbox={"boxstyle": "round,pad=0.15", "fc": OOM, "ec": "none"},
        )
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=90, fontsize=6.5 if len(labels) > 24 else 7.5)
    for x in oom_steps:
        ax.get_xticklabels()[x].set_color(OOM)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_ylim(0, max(top, 1e-9) * 1.22)  # room for the legend
    ax.set_ylabel(f"{ylabel} ({unit})")
    from matplotlib.patches import Patch

    handles = [Patch(color=ALLOCATED, label=legend[0]), Patch(color=FREE, label=legend[1])]
    if failed_requests:
        handles.append(Patch(fill=False, hatch="///", edgecolor=OOM, label=oom_label))
    ax.legend(
        handles=handles,
        loc="upper right",
        ncol=3,
        fontsize=7.5,
        frameon=False,
    )
