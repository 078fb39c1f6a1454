"""Each demo's plot makes its point alone in a chat thread: a title, labelled axes, readable
sizes, the limits drawn, 150–200 dpi, Greek that renders, nothing cut off, and the same
bytes for the same input."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from matplotlib.figure import Figure

from bot.domain import DemoJob, DemoState, Locale
from gpu_runner.demos import DemoOutput
from gpu_runner.executor import Executor
from tests.runner.demo_checks import NO_TORCH, captured_figures, check_plot, run_demo, texts

MiB = 1 << 20


@pytest.fixture
def figures() -> Iterator[list[Figure]]:
    """The figures the demos hand to `to_png`, for inspection after they are drawn."""
    with captured_figures() as captured:
        yield captured


def run(demo: str, locale: Locale, **params: object) -> DemoOutput:
    return run_demo(demo, locale, **params)


@pytest.mark.parametrize("locale", list(Locale))
@pytest.mark.parametrize("demo", NO_TORCH)
def test_plot_stands_alone(demo: str, locale: Locale, figures: list[Figure]) -> None:
    out = run(demo, locale)
    (fig,) = figures
    check_plot(demo, locale, out, fig)
    assert out.png == run(demo, locale).png  # byte-stable for a given input


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
