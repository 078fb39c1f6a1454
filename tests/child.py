"""A fresh interpreter for the checks that need one: run from the checkout, it prints its
answer as JSON on its last line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def child_json(args: list[str], *, timeout: float, env: Mapping[str, str] | None = None) -> Any:
    """``python *args`` in the checkout (on its PYTHONPATH, in `env` or this environment):
    it must exit 0; the JSON of its last line of output."""
    done = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={**(os.environ if env is None else env), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def alloc_conf_env(conf: str) -> dict[str, str]:
    """This environment with PYTORCH_CUDA_ALLOC_CONF set to `conf` alone (unset if empty)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("ALLOC_CONF")}
    if conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = conf
    return env
