"""Charts (`bot.dashboard.charts.Chart`) as inline SVG: no library, no script.

Each is an ``<svg role="img">`` labelled by its ``<title>`` (the finding) and ``<desc>``
(what is drawn); every bar has its own ``<title>`` (label and value), so a pointer or a
screen reader gets the figure. Colours come from the stylesheet (classes), which the
Content-Security-Policy allows; nothing is styled inline.
"""

from __future__ import annotations

from html import escape

from markupsafe import Markup

from bot.dashboard.charts import Chart

WIDTH, HEIGHT = 640, 260
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 16, 44
ROW = 22  # height of a horizontal bar's row


def _nice(top: float) -> float:
    """A round axis maximum at or above `top`."""
    if top <= 0:
        return 1.0
    step = 10 ** (len(str(int(top))) - 1)
    for m in (1, 2, 2.5, 5, 10):
        if m * step >= top:
            return float(m * step)
    return float(10 * step)


def _text(x: float, y: float, text: str, cls: str = "axis", anchor: str = "middle") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" class="{cls}" text-anchor="{anchor}">{escape(text)}</text>'
    )


def render(chart: Chart) -> Markup:
    return Markup(_columns(chart) if chart.vertical else _bars(chart))


def _head(chart: Chart, width: int, height: int) -> str:
    ident = f"chart-{escape(chart.name)}"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
        f'role="img" aria-labelledby="{ident}-t {ident}-d">'
        f'<title id="{ident}-t">{escape(chart.title)}</title>'
        f'<desc id="{ident}-d">{escape(chart.description)}</desc>'
    )


def _columns(chart: Chart) -> str:
    n = max(len(chart.bars), 1)
    top = _nice(max([b.value for b in chart.bars] + list(chart.line) + [chart.maximum or 0]))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / n
    out = [_head(chart, WIDTH, HEIGHT)]
    for i in range(5):  # grid and value ticks
        v = top * i / 4
        y = TOP + plot_h - plot_h * v / top
        out.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
        )
        out.append(_text(LEFT - 6, y + 4, f"{v:g}", anchor="end"))
    for i, bar in enumerate(chart.bars):
        h = plot_h * bar.value / top
        x = LEFT + i * step + step * 0.15
        y = TOP + plot_h - h
        out.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{step * 0.7:.1f}" height="{h:.1f}" '
            f'class="bar {bar.tone}"><title>{escape(bar.label)}: {escape(bar.text)}</title></rect>'
        )
        if n <= 12 or i % max(1, n // 7) == 0:
            out.append(_text(LEFT + (i + 0.5) * step, TOP + plot_h + 16, bar.label))
    if chart.line:
        points = " ".join(
            f"{LEFT + (i + 0.5) * step:.1f},{TOP + plot_h - plot_h * v / top:.1f}"
            for i, v in enumerate(chart.line)
        )
        out.append(f'<polyline points="{points}" class="line"/>')
        out.append(
            f'<rect x="{WIDTH - RIGHT - 150}" y="{TOP}" width="10" height="10" class="bar"/>'
            + _text(WIDTH - RIGHT - 136, TOP + 9, chart.y_label, "legend", "start")
            + f'<line x1="{WIDTH - RIGHT - 70}" x2="{WIDTH - RIGHT - 58}" y1="{TOP + 5}" '
            f'y2="{TOP + 5}" class="line"/>'
            + _text(WIDTH - RIGHT - 54, TOP + 9, chart.line_label, "legend", "start")
        )
    out.append(_text(LEFT + plot_w / 2, HEIGHT - 6, chart.x_label, "label"))
    out.append(
        f'<text x="12" y="{TOP + plot_h / 2:.1f}" class="label" text-anchor="middle" '
        f'transform="rotate(-90 12 {TOP + plot_h / 2:.1f})">{escape(chart.y_label)}</text>'
    )
    out.append("</svg>")
    return "".join(out)


def _bars(chart: Chart) -> str:
    label_w = 170
    rows = max(len(chart.bars), 1)
    height = TOP + rows * ROW + BOTTOM
    top = chart.maximum or _nice(max((b.value for b in chart.bars), default=1))
    plot_w = WIDTH - label_w - RIGHT
    out = [_head(chart, WIDTH, height)]
    if chart.band is not None:
        x0 = label_w + plot_w * chart.band[0] / top
        x1 = label_w + plot_w * chart.band[1] / top
        out.append(
            f'<rect x="{x0:.1f}" y="{TOP}" width="{x1 - x0:.1f}" height="{rows * ROW}" '
            f'class="band"><title>{escape(chart.band_label)}</title></rect>'
        )
        out.append(_text((x0 + x1) / 2, TOP + rows * ROW + 14, chart.band_label, "legend"))
    for i, bar in enumerate(chart.bars):
        y = TOP + i * ROW
        w = plot_w * bar.value / top
        out.append(_text(label_w - 6, y + ROW * 0.65, bar.label[:28], "axis", "end"))
        out.append(
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{ROW - 6}" '
            f'class="bar {bar.tone}"><title>{escape(bar.label)}: {escape(bar.text)}</title></rect>'
        )
        out.append(_text(label_w + w + 4, y + ROW * 0.65, bar.text, "value", "start"))
    out.append(_text(label_w + plot_w / 2, height - 8, chart.x_label, "label"))
    out.append("</svg>")
    return "".join(out)


__all__ = ["render"]
