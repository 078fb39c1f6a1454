"""Every run says what it is — GPU, simulated, CPU or arithmetic — in its report, its device
line and its PNG; the simulated note says whether a GPU has checked the simulator."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.domain import Locale
from gpu_runner.demos import RunContext, RunKind, default_registry
from gpu_runner.demos._labels import (
    SIMULATED_DEVICE,
    gpu_check_clause,
    simulated_label,
)
from gpu_runner.sim import GPU_CHECK, RULES_TORCH, GpuCheck, gpu_check_record
from tests.runner.png_text import png_text

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = default_registry()
IN_PROCESS = [d for d in REGISTRY.ids() if d != "activation-checkpointing"]


def test_the_simulated_label_claims_no_gpu_check_that_did_not_happen() -> None:
    label = simulated_label(Locale.EN, check=None)
    assert label.device == SIMULATED_DEVICE == f"simulated allocator (torch {RULES_TORCH} rules)"
    assert "follow CUDACachingAllocator's rules (torch 2.13); not yet checked on a GPU" in (
        label.note
    )
    assert "match a GPU run" not in label.note
    assert "not yet checked on a GPU" in label.plot_note
    el = simulated_label(Locale.EL, check=None)
    assert "δεν έχουν ελεγχθεί ακόμη σε GPU" in el.note and "δεν έχουν" in el.plot_note


def test_a_recorded_gpu_check_changes_every_simulated_note() -> None:
    check = GpuCheck("NVIDIA H200", "2.13.0", "2027-01-10")
    assert gpu_check_clause(Locale.EN, check) == (
        "checked on NVIDIA H200 with torch 2.13.0 (2027-01-10)"
    )
    label = simulated_label(Locale.EN, check=check)
    assert "checked on NVIDIA H200 with torch 2.13.0" in label.note
    assert "not yet" not in label.note + label.plot_note
    assert gpu_check_record(check) == "NVIDIA H200 · torch 2.13.0 · 2027-01-10"


def test_docs_record_the_same_gpu_check_as_the_code() -> None:
    text = (ROOT / "docs" / "runner.md").read_text()
    match = re.search(r"^GPU check record: (.+)$", text, re.MULTILINE)
    assert match, "docs/runner.md must state 'GPU check record: …'"
    assert match.group(1).strip().strip("`") == gpu_check_record(GPU_CHECK)


@pytest.mark.parametrize("locale", list(Locale))
@pytest.mark.parametrize("demo", IN_PROCESS)
def test_report_title_device_line_and_png_footer_agree_on_what_ran(
    demo: str, locale: Locale
) -> None:
    ctx = RunContext(demo, locale, REGISTRY.check(demo, {}), simulate=True)
    out = REGISTRY[demo].run(ctx)
    title = out.report.splitlines()[0]
    chunks = png_text(out.png or b"")
    assert chunks["Source"] == out.device  # the PNG footer's first line
    if out.simulated:
        label = simulated_label(locale)
        assert out.device == SIMULATED_DEVICE
        assert title.endswith(f"{label.tag}*")
        assert label.note.split("(")[0] in out.report or demo == "cuda-graph-pool"
        assert (
            gpu_check_clause(locale) in out.report
            and gpu_check_clause(locale) in (chunks["Comment"])
        )
    else:  # no torch in this process: the mixed demos are arithmetic only
        label = ctx.label(RunKind.ARITHMETIC)
        assert out.device == label.device and "torch not installed" in out.device
        assert title.endswith(f"{label.tag}*")
        assert out.report.splitlines()[-1] == label.note
        assert chunks["Comment"] == label.plot_note
        assert "simulat" not in out.report.lower() and "προσομοίωση" not in out.report
