"""`quizbot runner ping`: the health check the compose file and Kubernetes probe use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def ping(
    broker: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUIZBOT_")} | (env or {})
    env["QUIZBOT_CELERY_BROKER_URL"] = broker
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "runner", "ping", "--timeout", "0.5", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_ping_fails_clearly_when_no_worker_answers() -> None:
    # A broker nobody listens on: Celery cannot connect; the password never shows.
    done = ping("redis://:hunter2@127.0.0.1:1/0", "--all")
    assert done.returncode == 1
    assert "hunter2" not in done.stderr + done.stdout
    assert "127.0.0.1:1" in done.stderr


IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.mark.skipif(not IS_ROOT, reason="the demo user matters to a runner started as root")
def test_ping_says_demos_are_refused_and_how_to_fix_it(tmp_path: Path) -> None:
    hidden = tmp_path / "site"
    hidden.mkdir(mode=0o700)
    done = ping("redis://127.0.0.1:1/0", "--all", env={"PYTHONPATH": f"{ROOT}:{hidden}"})
    assert done.returncode == 1
    assert "demos are refused on this host" in done.stderr and str(hidden) in done.stderr
    assert "QUIZBOT_DEMO_USER" in done.stderr, done.stderr
    as_root = ping("redis://127.0.0.1:1/0", "--all", env={"QUIZBOT_DEMO_USER": "0:0"})
    assert as_root.returncode == 1 and "never run as root" in as_root.stderr, as_root.stderr
