"""Generated traces on the real CUDA allocator: the marked answer must be what torch says.

Each trace runs in a fresh process (``tests.questions.families.torch_trace``) under the
trace's PYTORCH_CUDA_ALLOC_CONF; skipped without CUDA.
"""

from __future__ import annotations

import json

import pytest

from questions.families import default_families, generate
from tests.child import alloc_conf_env, child_json

from .recompute import in_unit

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
    value = child_json(
        ["-m", "tests.questions.families.torch_trace", json.dumps(question.inputs)],
        timeout=50,
        env=alloc_conf_env(question.inputs["conf"]),
    )["value"]
    assert in_unit(value, question.unit) == question.choice_values[question.question.answer]
