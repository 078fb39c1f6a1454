"""Generation is pure: no torch in the process, the same question in every process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from questions.families import default_families, generate

ROOT = Path(__file__).resolve().parents[3]
CODE = (
    "import json, sys; from questions.families import default_families, generate; "
    "fams = default_families(); "
    "hashes = [generate(f, 12345, i).question.content_hash for f in fams for i in range(2)]; "
    "print(json.dumps({'torch': 'torch' in sys.modules, 'hashes': hashes}))"
)


def _run(hash_seed: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", CODE], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_generating_every_family_never_imports_torch() -> None:
    assert _run("0")["torch"] is False


@pytest.mark.slow
def test_questions_are_identical_across_processes_and_hash_seeds() -> None:
    here = [
        generate(f, 12345, i).question.content_hash for f in default_families() for i in range(2)
    ]
    assert _run("1")["hashes"] == here
    assert _run("2")["hashes"] == here
