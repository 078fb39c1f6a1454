"""`quizbot runner ping`: the health check the compose file and Kubernetes probe use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def ping(broker: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUIZBOT_")}
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
