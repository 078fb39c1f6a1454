"""The spec's scenarios on a real CUDA device, compared with the simulator figure by figure.

Each scenario runs in a fresh process (torch reads PYTORCH_CUDA_ALLOC_CONF once) through
``tests.sim.torch_scenarios``; the simulator runs the same scenario function with the
GPU's total memory. Only rule-determined figures are compared (spec 5).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpu_runner.sim import replay_file
from tests.child import alloc_conf_env, child_json
from tests.sim.scenarios import SCENARIOS, SimDevice


def _require_cuda() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch is installed but no CUDA device is available")


def _run_on_cuda(name: str, dump: Path | None = None) -> dict[str, Any]:
    _func, conf = SCENARIOS[name]
    argv = ["-m", "tests.sim.torch_scenarios", name]
    if dump is not None:
        argv.append(str(dump))
    payload: dict[str, Any] = child_json(argv, timeout=50, env=alloc_conf_env(conf))
    return payload


def _as_json(value: object) -> object:
    return json.loads(json.dumps(value))


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_figures_match_cuda(name: str) -> None:
    _require_cuda()
    payload = _run_on_cuda(name)
    func, conf = SCENARIOS[name]
    simulated = func(SimDevice(payload["total_memory"], conf))
    assert _as_json(simulated) == payload["figures"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["q4_native", "q4_expandable"])
def test_replaying_a_real_cuda_snapshot_reproduces_its_peaks(name: str, tmp_path: Path) -> None:
    _require_cuda()
    dump = tmp_path / f"{name}.pickle"
    payload = _run_on_cuda(name, dump)
    _, _, recorded, _ = replay_file(dump, total_memory=payload["total_memory"])
    assert recorded.peak_reserved == payload["peaks"]["peak_reserved"]
    assert recorded.peak_allocated == payload["peaks"]["peak_allocated"]
    assert recorded.unknown_frees == 0
