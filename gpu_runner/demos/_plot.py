"""Small matplotlib helpers (Agg, no display). Imported only inside the executor's child."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

ALLOCATED = "#4C72B0"
FREE = "#DD8452"
UNMAPPED = "#D9D9D9"
ACCENT = "#55A868"
MUTED = "#8C8C8C"
MiB = 1 << 20


def figure(width: float = 8.0, height: float = 3.4, rows: int = 1, cols: int = 1) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    # A bare Figure (not pyplot): nothing global to leak between demos.
    fig = Figure(figsize=(width, height), dpi=100)
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, [ax for row in axes for ax in row]


def to_png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    # No "Software" text chunk: the same demo gives byte-identical PNGs.
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def segment_map(
    ax: Any,
    snapshot: Sequence[dict[str, Any]],
    *,
    title: str,
    legend: tuple[str, str] = ("allocated", "free (inactive)"),
) -> None:
    """One horizontal bar per segment; each block a cell coloured by state, in MiB."""
    rows = [seg for seg in snapshot if seg["segment_type"] == "large"] or list(snapshot)
    for y, seg in enumerate(rows):
        start = int(seg["address"])
        for block in seg["blocks"]:
            colour = ALLOCATED if block["state"] != "inactive" else FREE
            left = (int(block["address"]) - start) / MiB
            width = int(block["size"]) / MiB
            ax.barh(y, width, left=left, color=colour, edgecolor="white", linewidth=0.8)
            if width >= 0.045 * int(seg["total_size"]) / MiB:
                ax.text(
                    left + width / 2,
                    y,
                    f"{width:g}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white",
                )
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{int(s['total_size']) / MiB:g} MiB" for s in rows], fontsize=8)
    ax.set_xlabel("MiB")
    ax.set_title(title, fontsize=10, loc="left")
    ax.invert_yaxis()
    from matplotlib.patches import Patch

    ax.legend(
        handles=[Patch(color=ALLOCATED, label=legend[0]), Patch(color=FREE, label=legend[1])],
        loc="lower right",
        bbox_to_anchor=(1.0, 1.0),
        ncol=2,
        fontsize=7,
        frameon=False,
    )


def grouped_bars(
    ax: Any,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float], str]],
    *,
    ylabel: str,
    title: str,
    fmt: str = "{:g}",
) -> None:
    """Bars grouped per label; `series` = (name, values, colour)."""
    n = len(series)
    width = 0.8 / max(n, 1)
    for i, (name, values, colour) in enumerate(series):
        xs = [x + (i - (n - 1) / 2) * width for x in range(len(labels))]
        bars = ax.bar(xs, values, width=width, label=name, color=colour)
        for bar, v in zip(bars, values, strict=True):
            ax.annotate(
                fmt.format(v),
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
                fontsize=7,
            )
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if n > 1:
        ax.legend(fontsize=7)
