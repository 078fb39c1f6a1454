"""The dependency rule: the core knows no platform, ORM or torch; the outer packages know
the core but not each other, and never its composition root or configuration; the bot
process never imports torch."""

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
    "jinja2",
    "markupsafe",
    "celery",
    "redis",
    "asyncpg",
    "aiosqlite",
    "matplotlib",
}
OUTER = {"adapters", "storage", "gpu_runner"}
# What each outer package may import of the others (the question families replay their
# traces on the runner's pure-Python simulator).
ALLOWED = {"questions": {"gpu_runner"}}
# The composition root and the configuration are the composition root's to use: a package
# below it is given what it needs (settings values, a store opener) instead. The adapters
# read their own settings (`SlackConfig.from_settings`, `DiscordAdapter.from_settings`).
ROOT_ONLY = {"bot.app", "bot.cli", "bot.config"}
READS_SETTINGS = {"adapters/slack/config.py", "adapters/discord/adapter.py"}


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


def imported_modules(path: Path) -> set[str]:
    """Every module named by an absolute import, with its parents (`bot.app.x` -> bot,
    bot.app, bot.app.x)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {".".join(n.split(".")[:i]) for n in names for i in range(1, n.count(".") + 2)}


@pytest.mark.parametrize("package", sorted(OUTER | {"questions"}))
def test_outer_packages_do_not_import_each_other(package: str) -> None:
    for path in python_files(package):
        others = (OUTER | {"questions"}) - {package} - ALLOWED.get(package, set())
        found = others & imported_roots(path)
        assert not found, f"{path.relative_to(ROOT)} imports {found}"


@pytest.mark.parametrize("package", sorted(OUTER | {"questions"}))
def test_no_package_below_the_composition_root_imports_it(package: str) -> None:
    for path in python_files(package):
        if str(path.relative_to(ROOT)) in READS_SETTINGS:
            continue
        found = ROOT_ONLY & imported_modules(path)
        assert not found, f"{path.relative_to(ROOT)} imports {found}"


def test_the_core_does_not_import_its_composition_root() -> None:
    for path in python_files("bot"):
        rel = str(path.relative_to(ROOT))
        if rel in COMPOSITION_ROOT:
            continue
        found = {"bot.app", "bot.cli"} & imported_modules(path)
        assert not found, f"{rel} imports {found}"


def test_the_questions_package_uses_only_the_runners_simulator() -> None:
    for path in python_files("questions"):
        runner = {m for m in imported_modules(path) if m.startswith("gpu_runner.")}
        assert runner <= {"gpu_runner.sim"} | {
            m for m in runner if m.startswith("gpu_runner.sim.")
        }, f"{path.relative_to(ROOT)} imports {runner}"


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
    bad.write_text(
        "from sqlalchemy import select\nimport torch.cuda\n"
        "def later():\n    from bot.app import open_store\n"
    )
    assert imported_roots(bad) & FORBIDDEN_IN_CORE == {"sqlalchemy", "torch"}
    assert ROOT_ONLY & imported_modules(bad) == {"bot.app"}  # function-level imports too
