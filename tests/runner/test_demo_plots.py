"""Each demo's plot makes its point alone in a chat thread: a title, labelled axes, readable
sizes, the limits drawn, 150–200 dpi, Greek that renders, nothing cut off, and the same
bytes for the same input."""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import findfont
from matplotlib.ft2font import FT2Font
from matplotlib.text import Text

from bot.domain import DemoJob, DemoState, Locale
from gpu_runner.demos import DemoOutput, RunContext, _plot, default_registry
from gpu_runner.executor import Executor

MiB = 1 << 20
REGISTRY = default_registry()
IN_PROCESS = [d for d in REGISTRY.ids() if d != "activation-checkpointing"]


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Figure]]:
    """The figures the demos hand to `to_png`, for inspection after they are drawn."""
    captured: list[Figure] = []
    original = _plot.to_png

    def keep(fig: Figure, label: Any = None) -> bytes:
        captured.append(fig)
        return original(fig, label)

    monkeypatch.setattr(_plot, "to_png", keep)
    yield captured


def run(demo: str, locale: Locale, **params: object) -> DemoOutput:
    ctx = RunContext(demo, locale, REGISTRY.check(demo, params), simulate=True)
    return REGISTRY[demo].run(ctx)


def texts(fig: Figure) -> list[Text]:
    """Every text the PNG shows: figure texts, titles, labels, ticks of drawn axes, notes,
    legends."""
    FigureCanvasAgg(fig).draw()
    found: list[Text] = [*fig.texts]
    if fig._suptitle is not None:
        found.append(fig._suptitle)
    for ax in fig.axes:
        found += [ax.title, ax._left_title, ax._right_title, *ax.texts]
        if ax.axison:
            found += [ax.xaxis.label, ax.yaxis.label]
            # Tick labels inside the view only (matplotlib also lays out the next ones).
            x0, x1 = sorted(ax.get_xlim())
            y0, y1 = sorted(ax.get_ylim())
            found += [t for t in ax.get_xticklabels() if x0 <= t.get_position()[0] <= x1]
            found += [t for t in ax.get_yticklabels() if y0 <= t.get_position()[1] <= y1]
        legend = ax.get_legend()
        if legend is not None:
            found += legend.get_texts()
    return [t for t in found if t.get_visible() and t.get_text().strip()]


def png_size(png: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
    return width, height


@pytest.mark.parametrize("locale", list(Locale))
@pytest.mark.parametrize("demo", IN_PROCESS)
def test_plot_stands_alone(demo: str, locale: Locale, figures: list[Figure]) -> None:
    out = run(demo, locale)
    (fig,) = figures
    assert 150 <= fig.dpi <= 200
    assert png_size(out.png or b"")[0] >= 1000  # legible at a chat thread's full width
    drawn = texts(fig)
    suptitle = fig.get_suptitle()
    for ax in (ax for ax in fig.axes if ax.axison):
        assert ax.get_title() or ax.get_title(loc="left") or suptitle, f"{demo}: untitled"
        assert ax.get_ylabel() or ax.get_xlabel(), f"{demo}: unlabelled axes"
    words = [t.get_text() for t in drawn]
    assert out.device in words  # the device line in the PNG, not only in the text
    assert not [w for w in words if re.fullmatch(r"0[.,]0+", w)], f"{demo}: unreadable size"
    canvas = fig.bbox
    renderer = FigureCanvasAgg(fig).get_renderer()
    for t in drawn:
        box = t.get_window_extent(renderer)
        assert box.x0 >= -1 and box.x1 <= canvas.x1 + 1, f"{demo}: {t.get_text()!r} cut off"
    if locale is Locale.EL:
        greek_renders_in_dejavu_sans(demo, drawn)
        reserved_and_allocated_follow_the_glossary(drawn)
    assert out.png == run(demo, locale).png  # byte-stable for a given input


def greek_renders_in_dejavu_sans(demo: str, drawn: list[Text]) -> None:
    """Every letter has a glyph in the font matplotlib picks, and that font is DejaVu Sans
    (it ships with matplotlib: no dependence on the host's fonts or locale)."""
    greek = 0
    for t in drawn:
        path = findfont(t.get_fontproperties(), fallback_to_default=False)
        assert "DejaVuSans" in path, (demo, path)
        charmap = FT2Font(path).get_charmap()
        missing = {ch for ch in t.get_text() if not ch.isspace() and ord(ch) not in charmap}
        assert not missing, (demo, t.get_text(), missing)
        greek += any(
            "\u0370" <= ch <= "\u03ff" or "\u1f00" <= ch <= "\u1fff" for ch in t.get_text()
        )
    assert greek, f"{demo}: no Greek in the Greek plot"


def reserved_and_allocated_follow_the_glossary(drawn: list[Text]) -> None:
    """δεσμευμένη is reserved and κατανεμημένη allocated, never the other way round."""
    for t in drawn:
        text = t.get_text()
        for english, greek in (("allocated", "κατανεμημέν"), ("reserved", "δεσμευμέν")):
            if f"({english})" in text:
                before = text.split(f"({english})")[0].split()[-2:]  # "κατανεμημένο μπλοκ"
                assert any(word.lower().startswith(greek) for word in before), text


def test_oom_plot_draws_the_cap_the_room_and_the_failing_request(figures: list[Figure]) -> None:
    run("oom-inactive-split", Locale.EN)
    (ax,) = figures[0].axes
    assert [1024.0, 1024.0] in [list(line.get_xdata()) for line in ax.get_lines()]  # the cap
    request = [p for p in ax.patches if p.get_y() > 0.5]  # row 1: the request
    assert [(p.get_x(), p.get_width()) for p in request] == [(800.0, 300.0)]
    words = [t.get_text() for t in texts(figures[0])]
    assert "cap 1 GiB" in words and "room: 224 MiB" in words
    assert ax.get_title(loc="left").startswith("300 MiB → OOM")


def test_paged_attention_plot_draws_the_budget(figures: list[Figure]) -> None:
    out = run("paged-attention", Locale.EN)
    (ax,) = figures[0].axes
    budget = out.metrics["budget_slots"] / 1000
    assert [budget, budget] in [list(line.get_ydata()) for line in ax.get_lines()]


def test_expandable_segments_plot_marks_the_cap_the_flushes_and_the_oom(
    figures: list[Figure],
) -> None:
    run("expandable-segments", Locale.EN)
    (ax,) = figures[0].axes
    lines = [list(line.get_xdata()) for line in ax.get_lines()]
    assert [80, 80] in lines and [112, 112] in lines  # the two retries that flushed the cache
    words = [t.get_text() for t in texts(figures[0])]
    assert words.count("retry: cache\nflushed") == 2 and "OOM" in words and "cap 768 MiB" in words


def test_reserved_vs_allocated_plot_labels_bytes_and_shows_free_and_empty_cache(
    figures: list[Figure],
) -> None:
    run("reserved-vs-allocated", Locale.EN)
    (ax,) = figures[0].axes
    words = [t.get_text() for t in texts(figures[0])]
    assert [t.get_text() for t in ax.get_xticklabels()][-2:] == ["free all", "empty_cache()"]
    assert "512 B" in words and "1.5 KiB" in words and "636 MiB" in words  # not "0" or "1"
    assert "512 B" in [t.get_text() for t in ax.get_yticklabels()]


def test_view_keeps_storage_plot_shows_a_kibibyte_as_such(figures: list[Figure]) -> None:
    run("view-keeps-storage", Locale.EN)
    assert "1 KiB" in [t.get_text() for t in texts(figures[0])]


def test_pngs_are_byte_stable_across_demo_processes(executor: Executor) -> None:
    first, second = (
        executor.run(DemoJob(n, "oom-inactive-split", Locale.EL, simulate=True)) for n in (1, 2)
    )
    assert first.state is second.state is DemoState.SUCCEEDED
    assert first.png is not None and first.png == second.png
