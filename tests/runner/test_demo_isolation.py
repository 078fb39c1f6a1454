"""A demo cannot read the secrets of the process that runs it, and a demo that meets its
memory cap says so.

What protects is checked where it happens: in a real process holding secrets in its
start-up environment (which is what ``/proc/<pid>/environ`` shows), with children that
try to read it. The controls show each layer is needed: a same-user child reads a
dumpable parent, and a root child reads even a non-dumpable one. Under root, a demo runs
as the demo user and opens none of root's files, or does not run at all.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.domain import DemoJob, DemoState, Locale
from gpu_runner.executor import Executor, ExecutorConfig
from gpu_runner.isolation import demo_credentials
from storage.store import SqlStore
from tests.child import child_json
from tests.runner.fault_demos import SOURCE, targets_path

SECRET = "xoxb-secret-token-for-the-isolation-test"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

# A parent holding SECRET forks a child that tries to read the parent's environ. Every
# import happens before the fork: a child that switched user may not read Python's files.
_PARENT = """
import json, os, sys
from gpu_runner.isolation import (
    DemoCredentials, PR_SET_DUMPABLE, _prctl, drop_privileges, make_non_dumpable,
)
parent, child = sys.argv[1], sys.argv[2]
if parent == "other-user":  # stands for a bot that does not run as root
    drop_privileges(DemoCredentials(65534, 65534))
if parent == "non-dumpable" or sys.argv[3] == "non-dumpable":
    make_non_dumpable("test parent")
else:
    _prctl(PR_SET_DUMPABLE, 1)  # a uid change made it non-dumpable: undo, as a control
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    outcome = "?"
    try:
        if child == "nobody":
            drop_privileges(DemoCredentials(65534, 65534))
        secret = os.environ["QUIZBOT_SLACK_BOT_TOKEN"].encode()
        with open(f"/proc/{os.getppid()}/environ", "rb") as f:
            outcome = "read the secret" if secret in f.read() else "read"
    except OSError as exc:
        outcome = type(exc).__name__
    finally:
        os.write(write, outcome.encode())
        os._exit(0)
os.close(write)
print(json.dumps(os.read(read, 100).decode()))
os.waitpid(pid, 0)
"""


def _attempt(parent: str, child: str, dumpable: str) -> str:
    env = {**os.environ, "QUIZBOT_SLACK_BOT_TOKEN": SECRET}
    outcome: str = child_json(["-c", _PARENT, parent, child, dumpable], timeout=30, env=env)
    return outcome


@linux_only
@pytest.mark.skipif(not IS_ROOT, reason="switching users needs root")
@pytest.mark.parametrize(
    ("dumpable", "outcome"),
    [("dumpable", "read the secret"), ("non-dumpable", "PermissionError")],
)
def test_a_same_user_child_is_kept_out_by_a_non_dumpable_parent(
    dumpable: str, outcome: str
) -> None:
    # The deployment case: the bot and its demos run as one non-root user.
    assert _attempt("other-user", "same-user", dumpable) == outcome


@linux_only
@pytest.mark.skipif(not IS_ROOT, reason="the root case needs root")
@pytest.mark.parametrize(
    ("child", "outcome"),
    [
        ("root", "read the secret"),  # CAP_SYS_PTRACE ignores non-dumpable
        ("nobody", "PermissionError"),
    ],
)
def test_under_root_a_child_must_lose_its_uid(child: str, outcome: str) -> None:
    assert _attempt("root", child, "non-dumpable") == outcome


_BOT = """
import json, os
from bot.domain import DemoJob, Locale
from gpu_runner.executor import Executor, ExecutorConfig
from tests.runner.fault_demos import SOURCE
with Executor(ExecutorConfig(registry=SOURCE, torch=False)) as executor:
    result = executor.run(DemoJob(1, "peek", Locale.EN))
    isolation = executor.info.isolation
print(json.dumps({"pid": os.getpid(), "state": result.state.value, "error": result.error,
                  "metrics": result.metrics, "isolation": isolation}))
"""


@linux_only
def test_a_demo_cannot_read_the_environment_of_the_bot_that_runs_it() -> None:
    env = {**os.environ, "QUIZBOT_SLACK_BOT_TOKEN": SECRET}
    seen = child_json(["-c", _BOT], timeout=120, env=env)
    assert seen["state"] == "succeeded", seen["error"]
    metrics = seen["metrics"]
    assert metrics["bot_pid"] == seen["pid"]  # it did find the bot
    assert metrics["bot_environ"] == "refused: PermissionError"
    assert metrics["server_environ"] == "refused: PermissionError"
    assert SECRET not in json.dumps(metrics)
    if IS_ROOT:
        assert seen["isolation"].startswith("uid 65534, no capabilities"), seen["isolation"]
    else:
        assert seen["isolation"] == f"uid {os.geteuid()} (the runner's own user)"


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory every user may enter (unlike pytest's tmp_path): only each file's own
    mode decides who reads it."""
    path = Path(tempfile.mkdtemp(prefix="quizbot-isolation-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


def _open_as_demo(paths: list[Path], config: ExecutorConfig) -> tuple[dict[str, Any], str]:
    token = time.monotonic_ns() % 10**12
    targets_path(token).write_text("\n".join(str(p) for p in paths))
    targets_path(token).chmod(0o644)
    try:
        with Executor(config) as executor:
            result = executor.run(DemoJob(1, "open", Locale.EN, {"token": token}))
            isolation = executor.info.isolation
    finally:
        targets_path(token).unlink()
    assert result.state is DemoState.SUCCEEDED, result.error
    return dict(result.metrics), isolation


@linux_only
@pytest.mark.skipif(not IS_ROOT, reason="the root case needs root")
async def test_under_root_a_demo_runs_as_the_demo_user_and_cannot_read_roots_files(
    shared_dir: Path,
) -> None:
    secret = shared_dir / "secrets.toml"
    secret.write_text('SLACK_BOT_TOKEN = "xoxb-1"')
    secret.chmod(0o600)
    public = shared_dir / "public.txt"
    public.write_text("anyone")
    public.chmod(0o644)
    database = shared_dir / "quizbot.db"
    store = SqlStore(f"sqlite+aiosqlite:///{database}", migrate=True)
    async with store:
        await store.ping()
    seen, isolation = _open_as_demo(
        [secret, public, database, Path("/etc/shadow")],
        ExecutorConfig(registry=SOURCE, torch=False),
    )
    assert seen["uid"] == 65534 and isolation.startswith("uid 65534"), (seen, isolation)
    assert seen["files"] == {
        str(secret): "refuse",
        str(public): "read: ",
        str(database): "refuse",
        "/etc/shadow": "refuse",
    }
    assert seen["cwd"] == "/"


@linux_only
@pytest.mark.skipif(not IS_ROOT, reason="the root case needs root")
def test_under_root_a_demo_user_who_cannot_read_python_is_refused_not_run_as_root(
    shared_dir: Path,
) -> None:
    hidden = shared_dir / "site"
    hidden.mkdir(mode=0o700)  # on the fork server's sys.path, unreadable by the demo user
    config = ExecutorConfig(registry=SOURCE, torch=False, extra_env={"PYTHONPATH": str(hidden)})
    with Executor(config) as executor:
        result = executor.run(DemoJob(1, "env", Locale.EN))
        isolation = executor.info.isolation
    assert result.state is DemoState.FAILED
    assert str(hidden) in result.error and "never run as root" in result.error, result.error
    assert "QUIZBOT_DEMO_USER" in result.error and "nothing ran" in result.error
    assert isolation.startswith("refused"), isolation


@linux_only
@pytest.mark.skipif(not IS_ROOT, reason="the root case needs root")
@pytest.mark.parametrize("user", ["root", "0", "0:0"])
def test_root_is_never_a_demo_user(user: str) -> None:
    with pytest.raises(ValueError, match="never run as root"):
        demo_credentials(user)


@pytest.fixture(scope="module")
def capped_executor() -> Iterator[Executor]:
    config = ExecutorConfig(registry=SOURCE, timeout=20.0, torch=False, host_memory_cap=128 << 20)
    with Executor(config) as executor:
        yield executor


@linux_only
@pytest.mark.parametrize("at_once", [0, 1], ids=["little-by-little", "all-at-once"])
def test_a_demo_that_meets_its_memory_cap_says_so(capped_executor: Executor, at_once: int) -> None:
    result = capped_executor.run(DemoJob(1, "hog", Locale.EN, {"at_once": at_once}))
    assert result.state is DemoState.FAILED
    assert result.error == (
        "ran out of memory (cap 128 MiB): the demo needed more host memory than it may use"
    )
    # The runner is unharmed: the next demo runs.
    assert capped_executor.run(DemoJob(2, "crash", Locale.EN)).error == "RuntimeError: boom"
