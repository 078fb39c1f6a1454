"""The checks every demo's output must pass: honest label, a plot that stands alone, text in
the locale's format and language. The test modules run them in-process for the demos that
need no torch (this process never imports torch); `python -m tests.runner.demo_checks ID...`
runs them in a process of its own with torch on the CPU, for the demos that use it
(`--serve`: one such process for many demos, a forked child each).

The checks of the text run demos with ``encode_png=False`` (the figure is drawn, footer
included, but not encoded: encoding is most of a run), once per demo and locale
(`rendered`); only the plot checks encode PNGs."""

from __future__ import annotations

import json
import multiprocessing
import re
import struct
import sys
import traceback
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import findfont
from matplotlib.ft2font import FT2Font
from matplotlib.text import Text

from bot.domain import Locale
from bot.i18n import translator
from gpu_runner.demos import DemoKind, DemoOutput, RunContext, RunKind, default_registry
from gpu_runner.demos._labels import (
    gpu_check_clause,
    no_torch_device,
    simulated_device,
    simulated_label,
)
from tests.greek_checks import (
    check_greek_is_greek,
    greek_misses,
    greek_numbers_in_plot,
    prose,
    texts,
)
from tests.runner.png_text import png_text

__all__ = [
    "check_greek_is_greek",
    "greek_misses",
    "greek_numbers_in_plot",
    "prose",
    "texts",
]

REGISTRY = default_registry()
NO_TORCH = [d for d in REGISTRY.ids() if REGISTRY[d].kind is not DemoKind.TORCH]
USES_TORCH = [d for d in REGISTRY.ids() if REGISTRY[d].kind is not DemoKind.ALLOCATOR]
# Smaller than the defaults where a demo's CPU run is slow; the checks are the same.
QUICK_PARAMS: Mapping[str, Mapping[str, object]] = {
    "model-loading-mmap": {"size_mib": 16},
    "ddp-gradient-buckets": {"layers": 6, "width": 512},
}


def run_demo(
    demo: str, locale: Locale, torch: Any = None, *, png: bool = True, **params: object
) -> DemoOutput:
    ctx = context(demo, locale, torch, png=png, **params)
    return REGISTRY[demo].run(ctx)


def context(
    demo: str, locale: Locale, torch: Any = None, *, png: bool = True, **params: object
) -> RunContext:
    checked = REGISTRY.check(demo, params)
    return RunContext(demo, locale, checked, simulate=True, torch=torch, encode_png=png)


@cache
def rendered(demo: str, locale: Locale) -> DemoOutput:
    """A demo without torch, its figure drawn but not encoded: what the text checks read
    (the same output for every check of a demo and locale)."""
    return run_demo(demo, locale, png=False)


# -- labels ---------------------------------------------------------------------------------


def check_label(ctx: RunContext, out: DemoOutput) -> None:
    """Title tag, device line, closing note and PNG footer agree on what ran (the footer as
    drawn; also the PNG's text chunks, when it was encoded)."""
    title = out.report.splitlines()[0]
    # The footer is drawn last, bottom line first: the note, then the device line above it.
    footer = [t.get_text() for t in out.figure.texts]
    device, note = footer[-1], footer[-2] if len(footer) > 1 else ""
    assert device == out.device  # the PNG footer's first line
    if out.png is not None:
        chunks = png_text(out.png)
        assert (chunks["Source"], chunks.get("Comment", "")) == (device, note)
    if out.simulated:
        label = simulated_label(ctx.locale)
        assert out.device.startswith(simulated_device(ctx.locale))
        assert title.endswith(f"{label.tag}*")
        assert label.note.split("(")[0] in out.report or ctx.demo == "cuda-graph-pool"
        clause = gpu_check_clause(ctx.locale)
        assert clause in out.report and clause in note
        return
    kind = RunKind.ARITHMETIC if ctx.torch is None else RunKind.CPU
    label = ctx.label(kind)
    assert out.device == label.device, (ctx.demo, out.device)
    assert title.endswith(f"{label.tag}*"), (ctx.demo, title)
    last = out.report.splitlines()[-1]
    if kind is RunKind.ARITHMETIC:
        assert out.device == no_torch_device(ctx.locale)
        assert last == label.note and note == label.plot_note
    else:  # what a CPU run measured is the demo's to say, in the label's frame
        assert last.startswith(label.note.split(":")[0] + ":"), (ctx.demo, last)
        assert note.startswith(translator(ctx.locale)("CPU run · {note}", note=""))
    assert "simulat" not in out.report.lower() and "προσομοίωση" not in out.report


# -- plots ----------------------------------------------------------------------------------


def png_size(png: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
    return width, height


def check_plot(demo: str, locale: Locale, out: DemoOutput) -> None:
    """A title, labelled axes, 150–200 dpi, legible width, the device line drawn, no
    unreadable size, nothing cut off, no legend over the data; in Greek, glyphs that
    render and the glossary."""
    fig: Figure = out.figure
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
    legends_cover_no_line(demo, fig)
    if locale is Locale.EL:
        greek_renders_in_dejavu_sans(demo, drawn)
        reserved_and_allocated_follow_the_glossary(drawn)
        greek_numbers_in_plot(demo, words)


def legends_cover_no_line(demo: str, fig: Figure) -> None:
    """No point of a drawn line lies under a legend's box."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer)
        for line in ax.get_lines():
            points = line.get_transform().transform(line.get_xydata())
            covered = [(x, y) for x, y in points if box.contains(x, y)]
            assert not covered, f"{demo}: the legend covers {line.get_label()!r}"


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


# -- language -------------------------------------------------------------------------------


def check_number_format(en_report: str, el_report: str) -> None:
    text = prose(el_report)
    # A dot between digits only groups thousands ("15.728"), never decimals ("0.875").
    assert not re.findall(r"\d\.(?=\d)(?!\d{3}(?!\d))", text), text
    assert not re.findall(r"\d{2},\d{3}(?!\d)", text), text  # "15,728": English grouping
    english = prose(en_report)
    assert not re.findall(r"\d,(?=\d)(?!\d{3}(?!\d))", english), english


def check_greek_separators(el_report: str) -> None:
    # Greek readers take ";" for a question mark: "·" separates.
    text = prose(el_report)
    assert not re.findall(r";\s+[^\s·*]", text), text


def check_glossary(el_report: str) -> None:
    text = prose(el_report)
    for english, greek in (("allocated", "κατανεμημέν"), ("reserved", "δεσμευμέν")):
        for before in re.findall(rf"(\S+) \({english}\)", text):
            assert before.lower().strip("*_(").startswith(greek), (english, before)
    assert not re.search(r"δεσμευμέν\S* \(allocated\)", text)


LANGUAGE_CHECKS: list[Callable[[str, str], None]] = [
    check_number_format,
    lambda _en, el: check_greek_separators(el),
    lambda _en, el: check_glossary(el),
    lambda _en, el: check_greek_is_greek(el),
]


# -- every check, with torch, in a process of its own ---------------------------------------


def check_with_torch(demo: str) -> None:
    """Both locales with CPU torch: label, plot, language, no catalog miss; the same
    figures give the same PNG bytes (measured figures may differ between runs; then the
    PNGs may too)."""
    import torch

    params = QUICK_PARAMS.get(demo, {})
    reports = {}
    for locale in Locale:
        outs: list[DemoOutput] = []

        def render(outs: list[DemoOutput] = outs, locale: Locale = locale) -> None:
            outs.append(run_demo(demo, locale, torch, **params))

        missed = greek_misses(render)
        out = outs[0]
        assert missed == [] or locale is Locale.EN, (demo, missed)
        again = run_demo(demo, locale, torch, **params)
        check_label(context(demo, locale, torch, **params), out)
        check_plot(demo, locale, out)
        if locale is Locale.EL:
            check_greek_is_greek(out.report, [t.get_text() for t in texts(out.figure)])
        if out.metrics == again.metrics:
            assert out.png == again.png, f"{demo}: same figures, different PNG bytes"
        reports[locale] = out.report
    for language_check in LANGUAGE_CHECKS:
        language_check(reports[Locale.EN], reports[Locale.EL])


def _checked_in_a_child(demo: str, answer: Any) -> None:
    try:
        check_with_torch(demo)
    except BaseException:  # the test shows what failed, and where
        answer.send(traceback.format_exc())
    else:
        answer.send("")


def serve() -> None:
    """One demo ID a line on stdin, one JSON line back each: ``{"demo", "error"}`` ("" when
    every check passed). torch is imported once, here; each demo runs in a forked child, as
    in the fork server, so no demo sees another's state."""
    import torch._dynamo  # noqa: F401  (a dispatch mode's first op imports it: 4 s a child)

    fork = multiprocessing.get_context("fork")
    for line in sys.stdin:
        demo = line.strip()
        mine, theirs = fork.Pipe(duplex=False)
        child = fork.Process(target=_checked_in_a_child, args=(demo, theirs))
        child.start()
        theirs.close()
        with mine:
            try:
                error = mine.recv()
            except EOFError:  # the child died before it could answer (its status says how)
                error = ""
        child.join()
        if child.exitcode:
            error = error or f"the check's process ended with status {child.exitcode}"
        print(json.dumps({"demo": demo, "error": error}), flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        for name in sys.argv[1:]:
            check_with_torch(name)
            print(f"{name}: ok")
