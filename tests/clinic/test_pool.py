"""Replays on forked workers: the same figures as in process, and a dead worker is named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpu_runner.clinic import _pool
from gpu_runner.clinic._input import read_snapshot
from gpu_runner.clinic._pool import WorkerError, replay_all
from gpu_runner.clinic._program import TraceProgram, compile_trace
from gpu_runner.clinic._replay import replay_program
from gpu_runner.sim import AllocatorConfig, parse_conf
from tests.clinic import snapshots

CONFS = ["", "expandable_segments:True", "max_split_size_mb:40", "roundup_power2_divisions:4"]


def program(tmp_path: Path) -> TraceProgram:
    path = snapshots.write(tmp_path / "s.pickle", snapshots.growing_batch())
    return compile_trace(read_snapshot(path, "s.pickle", 1 << 20, None).snapshot.traces[0])


def test_workers_return_every_result_in_order_and_report_each(tmp_path: Path) -> None:
    prog = program(tmp_path)
    configs = [parse_conf(c) for c in CONFS]
    done: list[int] = []
    runs = replay_all(prog, configs, snapshots.GPU_768, workers=2, on_done=lambda: done.append(1))
    assert runs == [replay_program(prog, c, snapshots.GPU_768) for c in configs]
    assert len(done) == len(configs)


def test_a_worker_that_dies_is_reported_not_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def die(program: TraceProgram, config: AllocatorConfig, total: int) -> None:
        os._exit(3)  # as if the kernel had killed it

    prog = program(tmp_path)
    monkeypatch.setattr(_pool, "replay_program", die)
    with pytest.raises(WorkerError, match="exit status 3"):
        replay_all(prog, [parse_conf(c) for c in CONFS], snapshots.GPU_768, workers=2)
