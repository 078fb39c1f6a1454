"""The label, plot and language checks for the demos that use torch, run as they run in a
demo child: with torch on the CPU, in a process of their own (this one never imports
torch). Skipped where torch is not installed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runner.demo_checks import USES_TORCH

ROOT = Path(__file__).resolve().parents[2]
HAS_TORCH = importlib.util.find_spec("torch") is not None


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch (pip install 'quizbot[gpu]')")
@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("demo", USES_TORCH)
def test_torch_run_is_labelled_plotted_and_worded_like_every_demo(demo: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.runner.demo_checks", demo],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=220,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert f"{demo}: ok" in done.stdout
