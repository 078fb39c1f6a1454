"""The dependency rule: the core knows no platform, ORM or torch; the outer packages know
the core but not each other; the bot process never imports torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPOSITION_ROOT = {"bot/app.py", "bot/cli.py"}
FORBIDDEN_IN_CORE = {
    "adapters",
    "storage",
    "gpu_runner",
    "questions",
    "slack_bolt",
    "slack_sdk",
    "discord",
    "sqlalchemy",
    "alembic",
    "torch",
    "aiohttp",
    "celery",
    "redis",
    "asyncpg",
    "aiosqlite",
    "matplotlib",
}
OUTER = {"adapters", "storage", "gpu_runner"}


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def python_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize(
    "path",
    [p for p in python_files("bot") if str(p.relative_to(ROOT)) not in COMPOSITION_ROOT],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_core_imports_no_platform_orm_or_torch(path: Path) -> None:
    assert imported_roots(path) & FORBIDDEN_IN_CORE == set()


@pytest.mark.parametrize("package", sorted(OUTER))
def test_outer_packages_do_not_import_each_other(package: str) -> None:
    for path in python_files(package):
        if "tests" in path.parts:
            continue
        others = (OUTER - {package}) & imported_roots(path)
        assert not others, f"{path.relative_to(ROOT)} imports {others}"


def test_the_bot_process_never_imports_torch() -> None:
    code = (
        "import sys, bot.cli, bot.app, bot.quiz, storage.store, adapters.console; "
        "bot.cli.build_parser(); "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == "False"


def test_the_rule_itself_catches_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from sqlalchemy import select\nimport torch.cuda\n")
    assert imported_roots(bad) & FORBIDDEN_IN_CORE == {"sqlalchemy", "torch"}
