"""Each demo's plot makes its point alone in a chat thread: a title, labelled axes, readable
sizes, the limits drawn, no legend over the curves, 150–200 dpi, Greek that renders,
nothing cut off, and the same bytes for the same input. These are the tests that encode
PNGs (one per demo, both locales); the other checks read the drawn figure."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from bot.domain import DemoJob, DemoState, Locale
from gpu_runner.demos import DemoOutput
from gpu_runner.executor import Executor
from tests.runner.demo_checks import (
    NO_TORCH,
    check_greek_is_greek,
    check_label,
    check_plot,
    context,
    greek_misses,
    legends_cover_no_line,
    rendered,
    run_demo,
    texts,
)

MiB = 1 << 20


def run(demo: str, locale: Locale, **params: object) -> DemoOutput:
    return run_demo(demo, locale, **params)


def figure(demo: str, locale: Locale = Locale.EN) -> Figure:
    """The drawn figure, without encoding it."""
    fig: Figure = rendered(demo, locale).figure
    return fig


@pytest.mark.slow
@pytest.mark.parametrize("demo", NO_TORCH)
def test_plot_stands_alone_in_both_locales_as_the_same_bytes(demo: str) -> None:
    for locale in Locale:
        out = run(demo, locale)
        assert out.png is not None
        check_plot(demo, locale, out)
        check_label(context(demo, locale), out)  # the PNG's text chunks too
        if locale is Locale.EL:
            check_greek_is_greek(out.report, [t.get_text() for t in texts(out.figure)])
    assert out.png == run(demo, locale).png  # byte-stable for a given input


@pytest.mark.parametrize("demo", NO_TORCH)
def test_greek_plot_and_report_find_every_string_in_the_catalogs(demo: str) -> None:
    assert greek_misses(lambda: run_demo(demo, Locale.EL, png=False)) == []


def test_oom_plot_draws_the_cap_the_room_and_the_failing_request() -> None:
    fig = figure("oom-inactive-split")
    (ax,) = fig.axes
    assert [1024.0, 1024.0] in [list(line.get_xdata()) for line in ax.get_lines()]  # the cap
    request = [p for p in ax.patches if p.get_y() > 0.5]  # row 1: the request
    assert [(p.get_x(), p.get_width()) for p in request] == [(800.0, 300.0)]
    words = [t.get_text() for t in texts(fig)]
    assert "cap 1 GiB" in words and "room: 224 MiB" in words
    assert ax.get_title(loc="left").startswith("300 MiB → OOM")


def test_paged_attention_plot_draws_the_budget() -> None:
    out = rendered("paged-attention", Locale.EN)
    (ax,) = out.figure.axes
    budget = out.metrics["budget_slots"] / 1000
    assert [budget, budget] in [list(line.get_ydata()) for line in ax.get_lines()]


def test_expandable_segments_plot_marks_the_cap_the_flushes_and_the_oom() -> None:
    fig = figure("expandable-segments")
    (ax,) = fig.axes
    lines = [list(line.get_xdata()) for line in ax.get_lines()]
    assert [80, 80] in lines and [112, 112] in lines  # the two retries that flushed the cache
    words = [t.get_text() for t in texts(fig)]
    assert words.count("retry: cache\nflushed") == 2 and "OOM" in words and "cap 768 MiB" in words


def test_expandable_segments_title_counts_the_flushes_it_marks() -> None:
    out = rendered("expandable-segments", Locale.EN)
    (ax,) = out.figure.axes
    marked = [t.get_text() for t in texts(out.figure)].count("retry: cache\nflushed")
    assert ax.get_title().startswith(f"Native: {marked} cache flushes and 1 OOM")
    # The report's 3 retries are those 2 and the OOM's own, and it says so.
    assert "3 retries (each flushes the cache; the OOM follows the last one)" in out.report


def test_expandable_segments_legend_leaves_the_curves_visible() -> None:
    legends_cover_no_line("expandable-segments", figure("expandable-segments"))


def test_reserved_vs_allocated_plot_labels_bytes_and_shows_free_and_empty_cache() -> None:
    fig = figure("reserved-vs-allocated")
    (ax,) = fig.axes
    words = [t.get_text() for t in texts(fig)]
    assert [t.get_text() for t in ax.get_xticklabels()][-2:] == ["free all", "empty_cache()"]
    assert "512 B" in words and "1.5 KiB" in words and "636 MiB" in words  # not "0" or "1"
    assert "512 B" in [t.get_text() for t in ax.get_yticklabels()]


def test_view_keeps_storage_plot_shows_a_kibibyte_as_such() -> None:
    assert "1 KiB" in [t.get_text() for t in texts(figure("view-keeps-storage"))]


def test_empty_cache_plot_and_report_name_the_same_view_and_size() -> None:
    out = rendered("empty-cache-live-tensor", Locale.EN)
    title = out.figure.axes[0].get_title()
    assert title.startswith("A 16-byte view keeps 1024 MiB until del v")
    assert "`v = x[:16]` is a 16-byte view of it" in out.report
    # What the view keeps, as the report's row after `del x` says it.
    assert "`v = x[:16]; del x; empty_cache()` → allocated 1024 MiB, reserved 1024 MiB" in (
        out.report
    )


def test_pngs_are_byte_stable_across_demo_processes(executor: Executor) -> None:
    first, second = (
        executor.run(DemoJob(n, "oom-inactive-split", Locale.EL, simulate=True)) for n in (1, 2)
    )
    assert first.state is second.state is DemoState.SUCCEEDED
    assert first.png is not None and first.png == second.png
