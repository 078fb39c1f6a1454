"""Generated traces on the real CUDA allocator: the marked answer must be what torch says.

Each trace runs in a fresh process (``tests.questions.families.torch_trace``) under the
trace's PYTORCH_CUDA_ALLOC_CONF; skipped without CUDA.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from questions.families import default_families, generate

from .recompute import in_unit

ROOT = Path(__file__).resolve().parents[3]
FAMILIES = default_families()
CASES = [
    (family.id, seed)
    for family in FAMILIES
    if family.kind == "allocator-trace"
    for seed in range(3)
]


@pytest.mark.gpu
@pytest.mark.parametrize(("family", "seed"), CASES)
def test_the_real_allocator_gives_the_marked_answer(family: str, seed: int) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch is installed but no CUDA device is available")
    question = generate(FAMILIES.require(family), seed)
    env = {k: v for k, v in os.environ.items() if not k.endswith("ALLOC_CONF")}
    if question.inputs["conf"]:
        env["PYTORCH_CUDA_ALLOC_CONF"] = question.inputs["conf"]
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-m", "tests.questions.families.torch_trace", json.dumps(question.inputs)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    value = json.loads(proc.stdout.strip().splitlines()[-1])["value"]
    assert in_unit(value, question.unit) == question.choice_values[question.question.answer]
