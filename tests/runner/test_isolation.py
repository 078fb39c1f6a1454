"""The bot side of the runner never loads torch or matplotlib, and the packages keep the
dependency rule (gpu_runner and storage never import each other)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_dependency_rule import imported_roots

ROOT = Path(__file__).resolve().parents[2]


def test_bot_side_imports_load_neither_torch_nor_matplotlib() -> None:
    code = (
        "import sys\n"
        "import bot.demos, storage.demo_runs, gpu_runner, gpu_runner.local\n"
        "import gpu_runner.celery_runner, gpu_runner.cli\n"
        "from gpu_runner.demos import default_registry\n"
        "r = default_registry(); r.check('fragmentation', {'blocks': '8'})\n"
        "print(sorted(m for m in ('torch', 'matplotlib', 'numpy') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    "path", sorted((ROOT / "bot" / "demos").glob("*.py")), ids=lambda p: p.name
)
def test_demos_package_of_the_core_imports_only_the_core(path: Path) -> None:
    allowed = {
        "bot",
        "__future__",
        "asyncio",
        "logging",
        "collections",
        "dataclasses",
        "datetime",
        "types",
        "typing",
    }
    assert imported_roots(path) <= allowed


def test_runner_and_storage_never_import_each_other() -> None:
    for path in (ROOT / "gpu_runner").rglob("*.py"):
        assert "storage" not in imported_roots(path), path
    assert "gpu_runner" not in imported_roots(ROOT / "storage" / "demo_runs.py")
