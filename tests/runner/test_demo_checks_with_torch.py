"""The label, plot and language checks for the demos that use torch, run as they run in a
demo child: with torch on the CPU, in a process of their own (this one never imports
torch). One checker process per test worker imports torch once and forks a child per demo.
Skipped where torch is not installed."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.runner.demo_checks import USES_TORCH

ROOT = Path(__file__).resolve().parents[2]
HAS_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture(scope="module")
def check() -> Iterator[Callable[[str], str]]:
    """Runs one demo's checks in the shared checker; returns what failed ("" if nothing)."""
    with subprocess.Popen(
        [sys.executable, "-m", "tests.runner.demo_checks", "--serve"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as server:
        stdin, stdout = server.stdin, server.stdout
        assert stdin is not None and stdout is not None

        def run(demo: str) -> str:
            stdin.write(demo + "\n")
            stdin.flush()
            line = stdout.readline()
            assert line, f"the checker ended (status {server.poll()}) before answering {demo}"
            answer = json.loads(line)
            assert answer["demo"] == demo
            return str(answer["error"])

        yield run
        stdin.close()
        server.wait(timeout=30)


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch (pip install 'quizbot[gpu]')")
@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("demo", USES_TORCH)
def test_torch_run_is_labelled_plotted_and_worded_like_every_demo(
    check: Callable[[str], str], demo: str
) -> None:
    assert check(demo) == ""
