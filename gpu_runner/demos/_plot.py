"""Plots that make their point alone in a chat thread (Agg, no display, no pyplot state).

Imported only inside the executor's child. Every figure gets the same style: 150 dpi,
DejaVu Sans (it ships with matplotlib and has Greek with its accents, so the plot does
not depend on the host's fonts or locale), sizes readable at chat-thumbnail width. The
footer of every PNG carries the run's device line and honest label (`finish(fig, label)`);
the same two lines are stored in the PNG's `Source` and `Comment` text chunks, and no
`Software` chunk or timestamp, so a given input gives byte-identical PNGs.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bot import formats
from bot.domain import Locale
from bot.i18n import translator

MiB = formats.MiB
GROUP_FROM = 10_000  # as the reports: "1024 MiB" reads the same in both locales


def format_bytes(nbytes: float, locale: Locale) -> str:
    return formats.size(nbytes, locale, group_from=GROUP_FROM)


def format_number(value: float, digits: int, locale: Locale) -> str:
    return formats.number(value, locale, digits, group_from=GROUP_FROM)


if TYPE_CHECKING:
    from gpu_runner.demos._labels import RunLabel

ALLOCATED = "#4C72B0"
FREE = "#DD8452"
UNMAPPED = "#D9D9D9"
ACCENT = "#55A868"
MUTED = "#8C8C8C"
LIMIT = "#C44E52"  # caps, budgets, failing requests
DPI = 150
FONT = "DejaVu Sans"
STYLE: dict[str, Any] = {
    "font.family": [FONT],
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "axes.formatter.use_locale": False,  # numbers follow the demo's locale, not the host's
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
}
FOOTER_LINE_IN = 0.17  # inches per footer line
# One segment as `segment_steps` reads it: total bytes and its blocks (offset, size, allocated).
Segment = tuple[int, list[tuple[int, int, bool]]]
# One `grouped_bars` series: its name, a value per label, its colour.
Series = tuple[str, Sequence[float], str]


def figure(width: float = 8.0, height: float = 3.4, rows: int = 1, cols: int = 1) -> Any:
    """A bare `Figure` (not pyplot: nothing global to leak) and its axes, flattened."""
    import matplotlib

    matplotlib.use("Agg")
    # The child owns its process; styling through rcParams reaches every artist created.
    rc: Any = matplotlib.rcParams
    rc.update(STYLE)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, [ax for row in axes for ax in row]


def footer_lines(label: RunLabel | None) -> list[str]:
    if label is None:
        return []
    return [line for line in (label.device, label.plot_note) if line]


def finish(fig: Any, label: RunLabel | None = None) -> None:
    """The label's device line and note drawn in the footer; the layout fixed."""
    lines = footer_lines(label)
    height = float(fig.get_figheight())
    bottom = (len(lines) * FOOTER_LINE_IN + 0.06) / height if lines else 0.0
    for i, line in enumerate(reversed(lines)):
        fig.text(
            0.01,
            (0.04 + i * FOOTER_LINE_IN) / height,
            line,
            fontsize=7.5,
            color="#555555",
            style="italic" if i == 0 and len(lines) > 1 else "normal",
        )
    fig.tight_layout(rect=(0.0, bottom, 1.0, 1.0))


def encode(fig: Any, label: RunLabel | None = None) -> bytes:
    """A finished figure as PNG bytes, the label also in the `Source` and `Comment` chunks."""
    metadata: dict[str, str | None] = {"Software": None}
    if label is not None:
        metadata["Source"] = label.device
        metadata["Comment"] = label.plot_note or None
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata=metadata)
    return buf.getvalue()


def byte_ticks(ax: Any, locale: Locale, axis: str = "y") -> None:
    """Tick labels in readable sizes (`512 B`, `1 KiB`, `20 MiB`) for data in bytes."""
    from matplotlib.ticker import FuncFormatter

    formatter = FuncFormatter(lambda v, _pos: "0" if v == 0 else format_bytes(v, locale))
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(formatter)


def number_ticks(ax: Any, locale: Locale, axis: str = "y", digits: int | None = 0) -> None:
    """Plain numbers in the locale's format (Greek: decimal comma); `digits=None`: as few
    decimals (up to 2) as each tick needs (`0`, `2.5`, `5`)."""
    from matplotlib.ticker import FuncFormatter

    def tick(v: float, _pos: int | None) -> str:
        need = digits
        if need is None:
            need = next((d for d in (0, 1) if abs(round(v, d) - v) < 1e-9 * max(1.0, v)), 2)
        return format_number(v, need, locale)

    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(FuncFormatter(tick))


def mark_level(
    ax: Any,
    value: float,
    text: str,
    *,
    axis: str = "y",
    colour: str = LIMIT,
    where: float = 0.99,
) -> None:
    """A dashed limit line (cap, budget, request) labelled where it is drawn."""
    if axis == "y":
        ax.axhline(value, color=colour, linestyle="--", linewidth=1.0)
        ax.annotate(
            text,
            (where, value),
            xycoords=("axes fraction", "data"),
            ha="right",
            va="bottom",
            fontsize=8,
            color=colour,
        )
    else:
        ax.axvline(value, color=colour, linestyle="--", linewidth=1.0)
        ax.annotate(
            text,
            (value, where),
            xycoords=("data", "axes fraction"),
            xytext=(3, 0),
            textcoords="offset points",
            ha="left",
            va="top",
            fontsize=8,
            color=colour,
        )


def bar_total(ax: Any, x: float, height: float, text: str) -> None:
    """A bar's headline figure, in bold just above it."""
    ax.annotate(
        text,
        (x, height),
        xytext=(0, 2),
        textcoords="offset points",
        ha="center",
        va="bottom",
        fontsize=8.5,
        fontweight="bold",
    )


def segment_map(
    ax: Any,
    snapshot: Sequence[dict[str, Any]],
    *,
    title: str,
    legend: tuple[str, str] = ("allocated", "free (inactive)"),
    locale: Locale = Locale.EN,
) -> None:
    """One horizontal bar per segment, each block a cell coloured by state; x in MiB."""
    from matplotlib.patches import Patch

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
                    format_number(width, 0 if width.is_integer() else 1, locale),
                    ha="center",
                    va="center",
                    fontsize=7.5,
                    color="white",
                )
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(
        [format_bytes(int(s["total_size"]), locale) for s in rows],
        fontsize=8,
    )
    t = translator(locale)
    ax.set_xlabel(t("offset in the segment (MiB)"), loc="left")
    ax.set_title(title, loc="left")
    ax.invert_yaxis()
    ax.legend(
        handles=[Patch(color=ALLOCATED, label=legend[0]), Patch(color=FREE, label=legend[1])],
        loc="upper right",
        bbox_to_anchor=(1.0, -0.17),
        ncol=2,
        frameon=False,
    )


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
    legend: tuple[str, str, str],
    oom_steps: Sequence[int] = (),
    failed_requests: Sequence[int] = (),
    cap: int | None = None,
    cap_label: str = "",
) -> None:
    """`segment_map` over time: one column per step, its segments stacked in address order
    (data in units of `scale` bytes), each block allocated or free, a thin line between
    segments; a failed request is drawn hatched where it would have gone, its step marked
    OOM. `legend`: allocated, free, the failed request."""
    from matplotlib.patches import Patch

    top = 0.0
    for x, segments in enumerate(steps):
        base = 0.0
        for total, blocks in segments:
            for offset, size, used in blocks:
                colour = ALLOCATED if used else FREE
                ax.bar(x, size / scale, bottom=base + offset / scale, width=0.78, color=colour)
            base += total / scale
            ax.plot([x - 0.39, x + 0.39], [base, base], color="white", linewidth=0.8)
        top = max(top, base)
    if cap is not None and cap / scale <= 1.6 * max(top, 1e-9):
        ax.axhline(cap / scale, color=LIMIT, linestyle="--", linewidth=1)
        ax.annotate(
            cap_label,
            (0.0, cap / scale),
            xytext=(2, 2),
            textcoords="offset points",
            color=LIMIT,
            fontsize=7.5,
        )
        top = max(top, cap / scale)
    for x, request in zip(oom_steps, failed_requests, strict=False):
        height = sum(total for total, _ in steps[x]) / scale
        ax.bar(
            x,
            request / scale,
            bottom=height,
            width=0.78,
            fill=False,
            hatch="///",
            edgecolor=LIMIT,
            linewidth=0.8,
        )
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
            bbox={"boxstyle": "round,pad=0.15", "fc": LIMIT, "ec": "none"},
        )
        top = max(top, height + request / scale)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=90, fontsize=6.5 if len(labels) > 24 else 7.5)
    for x in oom_steps:
        ax.get_xticklabels()[x].set_color(LIMIT)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_ylim(0, max(top, 1e-9) * 1.22)  # room for the legend
    handles = [Patch(color=ALLOCATED, label=legend[0]), Patch(color=FREE, label=legend[1])]
    if failed_requests:
        handles.append(Patch(fill=False, hatch="///", edgecolor=LIMIT, label=legend[2]))
    ax.legend(handles=handles, loc="upper right", ncol=3, frameon=False)


def mib_series(name: str, steps: Sequence[Mapping[str, Any]], key: str, colour: str) -> Series:
    """A `grouped_bars` series of each step's `key`, a byte count (None: 0), in MiB."""
    return name, [(step[key] or 0) / MiB for step in steps], colour


def grouped_bars(
    ax: Any,
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    ylabel: str,
    title: str,
    fmt: str | Callable[[float], str] = "{:g}",
    vertical_labels: bool = False,
) -> None:
    """Bars grouped per label; `series` = (name, values, colour); each bar labelled with
    `fmt` (a format string, or a function such as a locale's size formatter), upright
    when `vertical_labels` (many narrow bars)."""
    label_of = fmt.format if isinstance(fmt, str) else fmt
    n = len(series)
    width = 0.8 / max(n, 1)
    for i, (name, values, colour) in enumerate(series):
        xs = [x + (i - (n - 1) / 2) * width for x in range(len(labels))]
        bars = ax.bar(xs, values, width=width, label=name, color=colour)
        for bar, v in zip(bars, values, strict=True):
            ax.annotate(
                label_of(v),
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                rotation=90 if vertical_labels else 0,
                fontsize=7.5,
            )
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.margins(y=0.15)
    if n > 1:
        ax.legend()
