"""The environment a demo process gets: an allow-list, minus anything that looks secret.

The bot's process holds platform tokens and the database URL; a demo is our code, but it
runs third-party libraries (torch, matplotlib) and needs none of them, so the fork server
starts from an empty environment and copies only what is listed here.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

ALLOWED = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "TZ",
    "TMPDIR",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "PYTHONPATH",
    "PYTHONHASHSEED",
    "VIRTUAL_ENV",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "LD_LIBRARY_PATH",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "XDG_CACHE_HOME",
    "MPLCONFIGDIR",
)
# Checked after the allow-list, so a secret-looking name never passes (LC_API_TOKEN...).
DENIED = (
    "*TOKEN*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "*_KEY",
    "*API_KEY*",
    "SLACK_*",
    "DISCORD_*",
    "QUIZBOT_*",
    "AWS_*",
    "DATABASE_URL",
    "*_DSN",
)


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, p) for p in patterns)


def is_allowed(name: str) -> bool:
    return _matches(name, ALLOWED) and not _matches(name, DENIED)


def demo_environment(
    source: Mapping[str, str], extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The allow-listed part of `source`, plus `extra` (which must pass the same test)."""
    env = {k: v for k, v in source.items() if is_allowed(k)}
    for key, value in (extra or {}).items():
        if _matches(key, DENIED):
            raise ValueError(f"refusing to pass {key} to a demo process")
        env[key] = value
    return env


def per_demo_environment(
    base: Mapping[str, str], alloc_conf: str, gpu: int | None
) -> dict[str, str]:
    """The variables one child sets before it touches CUDA."""
    env: dict[str, str] = {"PYTORCH_CUDA_ALLOC_CONF": alloc_conf}
    if gpu is not None:
        visible = [d for d in base.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
        env["CUDA_VISIBLE_DEVICES"] = visible[gpu] if gpu < len(visible) else str(gpu)
    return env
