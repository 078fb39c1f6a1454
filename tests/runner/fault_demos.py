"""A test-only registry: the real demos plus demos that misbehave on purpose.

Built by `registry()`, handed to executors as "tests.runner.fault_demos:registry"; the real
registry stays untouched (registries are values, not globals).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from gpu_runner.demos import Demo, DemoKind, DemoOutput, Param, Registry, RunContext
from gpu_runner.demos import default_registry as real_registry

SOURCE = "tests.runner.fault_demos:registry"
PNG = b"\x89PNG\r\n\x1a\n-test-"
PAUSE = [sys.executable, "-c", "import signal\nsignal.pause()"]  # a helper that waits to be killed


def gate_path(token: int) -> Path:
    return Path(tempfile.gettempdir()) / f"quizbot-test-gate-{token}"


def pid_path(token: int) -> Path:
    return Path(tempfile.gettempdir()) / f"quizbot-test-hang-{token}.pid"


def gate_pid_path(token: int) -> Path:
    return Path(tempfile.gettempdir()) / f"quizbot-test-gate-{token}.pid"


def _hang(ctx: RunContext) -> DemoOutput:
    # A grandchild too: the timeout must end the whole process group.
    helper = subprocess.Popen(PAUSE)
    pid_path(ctx.int("token")).write_text(str(helper.pid))
    threading.Event().wait()  # hangs until the executor kills the process group


def _escape(ctx: RunContext) -> DemoOutput:
    """Succeeds, leaving behind a process of its own session that holds the log pipe: a
    kill of the demo's process group cannot reach it."""
    helper = subprocess.Popen(PAUSE, start_new_session=True)
    pid_path(ctx.int("token")).write_text(str(helper.pid))
    return DemoOutput("escaped", {"token": ctx.int("token")}, PNG, "test device")


def _crash(ctx: RunContext) -> DemoOutput:
    raise RuntimeError("boom")


def _exit(ctx: RunContext) -> DemoOutput:
    os._exit(3)


def _sigkill(ctx: RunContext) -> DemoOutput:
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


def _flood(ctx: RunContext) -> DemoOutput:
    chunk = "x" * 1024 + "\n"
    for _ in range(ctx.int("kib")):
        sys.stdout.write(chunk)
    sys.stdout.flush()
    return DemoOutput("flooded")


def _env(ctx: RunContext) -> DemoOutput:
    return DemoOutput(
        "environment",
        {"env": dict(os.environ), "pid": os.getpid(), "ppid": os.getppid()},
        PNG,
        "test device",
    )


def _hog(ctx: RunContext) -> DemoOutput:
    """Allocates 1 MiB at a time until the memory cap stops it (or one huge block)."""
    if ctx.int("at_once"):
        held = [bytearray(1 << 40)]
    else:
        held = []
        while True:
            held.append(bytearray(1 << 20))
    return DemoOutput(f"held {len(held)}")


def _read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return "read: " + f.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"refused: {type(exc).__name__}"


def _peek(ctx: RunContext) -> DemoOutput:
    """What a hostile demo would try: the environment of the fork server and of the
    process above it (the bot), through /proc."""
    server = os.getppid()
    with open(f"/proc/{server}/stat") as f:
        bot = int(f.read().rsplit(")", 1)[1].split()[1])  # field 4: the parent's pid
    metrics = {
        "uid": os.getuid(),
        "bot_pid": bot,
        "bot_environ": _read(f"/proc/{bot}/environ"),
        "server_environ": _read(f"/proc/{server}/environ"),
        "own_environ": _read("/proc/self/environ")[:6],
    }
    return DemoOutput("peeked", metrics, PNG, "test device")


def targets_path(token: int) -> Path:
    return Path(tempfile.gettempdir()) / f"quizbot-test-open-{token}.txt"


def _open(ctx: RunContext) -> DemoOutput:
    """Tries to read each file the test listed (one path per line): a demo poking at the
    host's secrets."""
    paths = targets_path(ctx.int("token")).read_text().splitlines()
    metrics = {"uid": os.getuid(), "cwd": os.getcwd(), "files": {p: _read(p)[:6] for p in paths}}
    return DemoOutput("opened", metrics, PNG, "test device")


def _gate(ctx: RunContext) -> DemoOutput:
    """Waits until the test opens the gate (creates a file), then succeeds."""
    gate = gate_path(ctx.int("token"))
    gate_pid_path(ctx.int("token")).write_text(str(os.getpid()))
    while not gate.exists():
        time.sleep(0.01)
    return DemoOutput("gate passed", {"token": ctx.int("token")}, PNG, "test device")


TOKEN = (Param("token", int, 0, 10**12, 0, "file name token"),)


def registry() -> Registry:
    real = list(real_registry().values())
    faults = [
        Demo("hang", "Hangs", DemoKind.TORCH, _hang, TOKEN),
        Demo("escape", "Leaves a process behind", DemoKind.TORCH, _escape, TOKEN),
        Demo("crash", "Raises", DemoKind.TORCH, _crash),
        Demo("exit", "Exits 3", DemoKind.TORCH, _exit),
        Demo("sigkill", "Killed", DemoKind.TORCH, _sigkill),
        Demo(
            "flood",
            "Floods",
            DemoKind.TORCH,
            _flood,
            (Param("kib", int, 1, 1 << 20, 1024),),
        ),
        Demo(
            "env",
            "Environment",
            DemoKind.TORCH,
            _env,
            alloc_conf="expandable_segments:True",
        ),
        Demo("gate", "Gate", DemoKind.TORCH, _gate, TOKEN),
        Demo(
            "hog",
            "Hogs memory",
            DemoKind.TORCH,
            _hog,
            (Param("at_once", int, 0, 1, 0, "one huge block"),),
        ),
        Demo("peek", "Peeks", DemoKind.TORCH, _peek),
        Demo("open", "Opens files", DemoKind.TORCH, _open, TOKEN),
    ]
    return Registry.of(real + faults, source=SOURCE)
