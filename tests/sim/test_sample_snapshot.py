"""`quizbot sim sample-snapshot OUT`: a snapshot in torch's `_dump_snapshot()` format, made
by the simulator, so the memory clinic can be tried without a GPU."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from bot.domain import Locale
from gpu_runner.clinic._input import read_snapshot
from gpu_runner.clinic.analysis import analyse
from gpu_runner.sim import MiB, load_snapshot

ROOT = Path(__file__).resolve().parents[2]


def quizbot(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def test_the_sample_is_a_snapshot_the_clinic_takes_and_answers(tmp_path: Path) -> None:
    out = tmp_path / "sample.pickle"
    done = quizbot("sim", "sample-snapshot", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert str(out) in done.stdout and "/quiz clinic" in done.stdout
    raw = pickle.loads(out.read_bytes())
    assert set(raw) >= {"segments", "device_traces", "allocator_settings"}
    assert load_snapshot(out).traces  # the simulator's own reader takes it
    loaded = read_snapshot(out, out.name, 100 * MiB, None)
    answer = analyse(loaded, out.name, Locale.EN, workers=1)
    assert answer.recommendation == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    hint = "--total-memory 768MiB --conf expandable_segments:True"
    assert hint in done.stdout  # the replay it suggests runs
    replayed = quizbot("sim", "replay", str(out), *hint.split(), cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr


@pytest.mark.slow
def test_the_sample_is_the_same_every_time(tmp_path: Path) -> None:
    first, second = tmp_path / "a.pickle", tmp_path / "b.pickle"
    assert quizbot("sim", "sample-snapshot", str(first), cwd=tmp_path).returncode == 0
    assert quizbot("sim", "sample-snapshot", str(second), cwd=tmp_path).returncode == 0
    assert first.read_bytes() == second.read_bytes()


@pytest.mark.slow
def test_an_existing_file_is_not_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "mine.pickle"
    out.write_bytes(b"keep me")
    done = quizbot("sim", "sample-snapshot", str(out), cwd=tmp_path)
    assert done.returncode == 2 and "exists" in done.stderr and out.read_bytes() == b"keep me"
