"""PNG of reserved and allocated memory over a replayed trace (matplotlib, Agg canvas)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bot import formats
from bot.domain import Locale
from bot.i18n import translator
from gpu_runner.sim._sizes import MiB
from gpu_runner.sim.replay import ReplayResult


def plot_replays(
    results: Sequence[ReplayResult],
    path: str | Path,
    *,
    title: str = "",
    locale: Locale = Locale.EN,
) -> Path:
    """Draw one reserved (solid) and one allocated (dashed) line per result; return the path."""
    t = translator(locale)
    # the object API with an explicit Agg canvas: no pyplot global state, no display needed
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    fig = Figure(figsize=(9, 4.5), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    colors = ("tab:blue", "tab:orange", "tab:green", "tab:red")
    for n, result in enumerate(results):
        line = result.timeline
        color = colors[n % len(colors)]
        name = result.label or result.conf or t("defaults")
        ax.plot(
            line.x,
            [v / MiB for v in line.reserved],
            color=color,
            label=t("reserved, {name}", name=name),
        )
        ax.plot(
            line.x,
            [v / MiB for v in line.allocated],
            color=color,
            linestyle="--",
            label=t("allocated, {name}", name=name),
        )
    x_is_time = bool(results) and results[0].timeline.x_is_time
    ax.set_xlabel(t("time since first event (s)") if x_is_time else t("event"))
    ax.set_ylabel("MiB")
    # Tick numbers in the locale (a decimal comma in Greek), not matplotlib's.
    ticks = FuncFormatter(lambda v, _pos: formats.trimmed(v, locale, 3, group_from=10_000))
    ax.xaxis.set_major_formatter(ticks)
    ax.yaxis.set_major_formatter(ticks)
    ax.set_title(title or t("Replayed allocator trace"))
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png")
    return out
