"""The `quizbot` entry point: a reader that stops early (`| head`) ends the command
quietly, and `serve --help` names the variables it reads, from the settings model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bot.config import Settings, env_name

ROOT = Path(__file__).resolve().parents[1]


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("QUIZBOT_")}


def test_a_reader_that_stops_early_ends_the_command_without_an_error() -> None:
    # More than a pipe's buffer of output, and the reader takes one line (`| head -1`).
    with subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "questions", "generate", "request-rounding",
         "--count", "1000"],
        cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    ) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=120)
    assert "Broken pipe" not in err and "BrokenPipeError" not in err, err
    assert "Exception ignored" not in err and err == "", err
    assert code == 1  # what Python itself exits with on EPIPE


def test_serve_help_lists_every_variable_of_the_settings() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "serve", "--help"],
        cwd=ROOT, env=env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    names = [env_name(field) for field in Settings.model_fields]
    assert {"SLACK_BOT_TOKEN", "DISCORD_TOKEN", "QUIZBOT_DATABASE_URL"} <= set(names)
    missing = [n for n in names if n not in done.stdout]
    assert missing == [], done.stdout
    assert "the environment wins" in " ".join(done.stdout.split())
