"""Every run says what it is — GPU, simulated, CPU or arithmetic — in its report, its device
line and its PNG; the simulated note says whether a GPU has checked the simulator."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.domain import Locale
from gpu_runner.demos._labels import (
    SIMULATED_DEVICE,
    cpu_label,
    gpu_check_clause,
    no_torch_device,
    simulated_device,
    simulated_label,
)
from gpu_runner.sim import GPU_CHECK, RULES_TORCH, GpuCheck, gpu_check_record
from tests.runner.demo_checks import NO_TORCH, check_label, context, rendered

ROOT = Path(__file__).resolve().parents[2]


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


def test_a_cpu_run_beside_an_unused_gpu_does_not_say_there_is_no_gpu() -> None:
    # model-loading-mmap measures host memory even where CUDA is available.
    device = "NVIDIA H200 · torch 2.13.0 · CUDA 13.0"
    beside = cpu_label(Locale.EN, device, "host memory", gpu_unused=True)
    assert beside.tag == " · CPU, GPU unused" and beside.device == device
    assert cpu_label(Locale.EL, device, "x", gpu_unused=True).tag == (
        " · CPU, η GPU δεν χρησιμοποιείται"
    )
    assert cpu_label(Locale.EN, "CPU · torch 2.13.0 (no GPU)").tag == " · CPU, no GPU"


@pytest.mark.parametrize("locale", list(Locale))
@pytest.mark.parametrize("demo", NO_TORCH)
def test_report_title_device_line_and_png_footer_agree_on_what_ran(
    demo: str, locale: Locale
) -> None:
    check_label(context(demo, locale), rendered(demo, locale))


def test_the_device_line_is_in_the_readers_language() -> None:
    assert simulated_device(Locale.EL) == "προσομοιωμένος allocator (κανόνες του torch 2.13)"
    assert simulated_label(Locale.EL, "2.13.0+cpu").device == (
        "προσομοιωμένος allocator (κανόνες του torch 2.13) · έλεγχος στη CPU: torch 2.13.0+cpu"
    )
    assert no_torch_device(Locale.EL).startswith("μόνο υπολογισμός, χωρίς GPU")
    assert simulated_device(Locale.EN) == SIMULATED_DEVICE  # what the executor says
