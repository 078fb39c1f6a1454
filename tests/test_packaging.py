"""The package as a wheel (it is not on PyPI: people install from a checkout or from a
built wheel): it builds without deprecation warnings, its metadata says what it needs, and
it carries the catalogs, the question bank and the migrations. Built once, from a copy of
the sources (the build leaves its own files next to them)."""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "bot", "adapters", "questions", "storage", "gpu_runner")
pytest.importorskip("build", reason="the dev extra installs build")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[zipfile.ZipFile, str]:
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(ROOT / name, src / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, src / name)
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    (wheel,) = out.glob("quizbot-*.whl")
    return zipfile.ZipFile(wheel), log


def test_the_wheel_builds_without_deprecation_warnings(built: tuple[zipfile.ZipFile, str]) -> None:
    _, log = built
    assert "deprecat" not in log.lower(), log[-3000:]


def test_the_metadata_names_the_license_python_extras_and_command(
    built: tuple[zipfile.ZipFile, str],
) -> None:
    wheel, _ = built
    info = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    meta = email.message_from_bytes(wheel.read(info))
    assert meta["Name"] == "quizbot" and meta["License-Expression"] == "Apache-2.0"
    assert meta["Requires-Python"] == ">=3.11"
    assert {"postgres", "celery", "gpu", "dev"} <= set(meta.get_all("Provides-Extra") or [])
    assert any(
        r.startswith("asyncpg") and 'extra == "postgres"' in r
        for r in meta.get_all("Requires-Dist") or []
    )
    assert meta["Description-Content-Type"].startswith("text/markdown")
    assert "pip install '.[postgres]'" in meta.get_payload()  # the README: from a checkout
    entry = next(n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))
    assert "quizbot = bot.cli:main" in wheel.read(entry).decode()


def test_the_wheel_carries_catalogs_bank_and_migrations(built: tuple[zipfile.ZipFile, str]) -> None:
    wheel, _ = built
    names = set(wheel.namelist())
    bank = {f"questions/bank/{p.name}" for p in (ROOT / "questions" / "bank").glob("*.yaml")}
    assert bank and bank <= names
    catalogs = {str(p.relative_to(ROOT)) for p in (ROOT / "bot" / "locale").rglob("*.mo")}
    assert catalogs and catalogs <= names
    versions = {str(p.relative_to(ROOT)) for p in (ROOT / "storage" / "migrations").rglob("*.py")}
    assert versions and versions <= names
