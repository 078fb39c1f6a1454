"""scripts/gpu_check_report.py: the GPU check's verdict and its simulator-vs-CUDA table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_check_report.py"

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.sim.test_gpu_parity" name="test_scenario_figures_match_cuda[q1]"/>
{extra}
</testsuite></testsuites>"""


def report(tmp_path: Path, cuda: bool, extra: str = "", demos_rc: int = 0) -> tuple[int, str]:
    (tmp_path / "gpu-tests.xml").write_text(JUNIT.format(extra=extra))
    (tmp_path / "device.txt").write_text("NVIDIA H200 · torch 2.13.0 · CUDA 13.0\n")
    argv = [sys.executable, str(SCRIPT), str(tmp_path), "1" if cuda else "0", "0", str(demos_rc)]
    proc = subprocess.run([*argv, "42"], capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout


def write_run(tmp_path: Path, demo: str, mode: str, metrics: dict[str, object]) -> None:
    out = tmp_path / "demos" / demo / mode
    out.mkdir(parents=True)
    payload = {"demo": demo, "state": "succeeded", "metrics": metrics}
    (out / "metrics.json").write_text(json.dumps(payload))


def test_a_passing_check_on_a_gpu_says_how_to_record_it(tmp_path: Path) -> None:
    write_run(tmp_path, "fragmentation", "cuda", {"reserved_bytes": 800, "us_per_iter": 3.0})
    write_run(tmp_path, "fragmentation", "simulated", {"reserved_bytes": 800, "us_per_iter": None})
    rc, text = report(tmp_path, cuda=True)
    assert rc == 0 and "verdict: **PASSED**" in text
    assert "| fragmentation | succeeded | succeeded | 1 | 0  |" in text  # timings left out
    assert 'GPU_CHECK = GpuCheck("NVIDIA H200", "2.13.0",' in text


def test_a_figure_that_differs_from_the_simulator_is_named(tmp_path: Path) -> None:
    write_run(tmp_path, "fragmentation", "cuda", {"at": {"reserved_bytes": 802}})
    write_run(tmp_path, "fragmentation", "simulated", {"at": {"reserved_bytes": 800}})
    _, text = report(tmp_path, cuda=True)
    assert "| 0 | 1 `at.reserved_bytes` |" in text


def test_a_failed_or_skipped_gpu_test_on_a_gpu_fails_the_check(tmp_path: Path) -> None:
    failed = '<testcase classname="t" name="x"><failure message="402 != 400"/></testcase>'
    rc, text = report(tmp_path, cuda=True, extra=failed)
    assert rc == 1 and "verdict: **FAILED**" in text and "FAILED `t::x`: 402 != 400" in text
    skipped = '<testcase classname="t" name="y"><skipped message="no CUDA device"/></testcase>'
    rc, text = report(tmp_path, cuda=True, extra=skipped)
    assert rc == 1 and "INCOMPLETE" in text


def test_without_cuda_the_check_is_skipped_not_passed(tmp_path: Path) -> None:
    skipped = '<testcase classname="t" name="y"><skipped message="no CUDA device"/></testcase>'
    rc, text = report(tmp_path, cuda=False, extra=skipped)
    assert rc == 0 and "SKIPPED: no CUDA here" in text and "GpuCheck(" not in text
