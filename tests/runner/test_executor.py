"""The executor: fresh process per demo, timeouts, crashes, caps, a clean environment."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.domain import DemoJob, DemoState, Locale
from gpu_runner.demos import DemoRequestError
from gpu_runner.executor import Executor, ExecutorConfig
from tests.polling import eventually_sync
from tests.runner.fault_demos import SOURCE, gate_pid_path, pid_path


def job(demo: str, **params: object) -> DemoJob:
    return DemoJob(1, demo, Locale.EN, params)


def _dead(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # a zombie waits for init to reap it: it runs no more


def test_hanging_demo_is_killed_at_the_timeout_with_its_process_group(
    fault_executor: Executor, token: int
) -> None:
    start = time.monotonic()
    result = fault_executor.run(job("hang", token=token), timeout=1.0)
    elapsed = time.monotonic() - start
    assert result.state is DemoState.TIMED_OUT
    assert "did not finish within 1 s" in result.error
    assert elapsed < 5.0
    helper = int(pid_path(token).read_text())
    pid_path(token).unlink()
    eventually_sync(
        lambda: _dead(helper), timeout=5.0, what="the hanging demo's own child to be killed"
    )


def test_a_demo_whose_deadline_passes_before_it_has_a_process_group_is_stopped(
    fault_executor: Executor, token: int
) -> None:
    # The deadline passes while the child is still between fork() and its setsid(): there
    # is no group to kill yet, so the child itself is killed.
    for _ in range(5):
        start = time.monotonic()
        result = fault_executor.run(job("hang", token=token), timeout=0.0001)
        assert result.state is DemoState.TIMED_OUT
        assert time.monotonic() - start < 5.0
    assert fault_executor.run(job("crash")).error == "RuntimeError: boom"  # still serving


def test_a_demo_that_leaves_a_process_holding_its_output_is_reported_all_the_same(
    fault_executor: Executor, token: int
) -> None:
    # The helper runs in a session of its own, out of reach of the kill of the demo's
    # group, and keeps the demo's log pipe open until the test kills it.
    start = time.monotonic()
    try:
        result = fault_executor.run(job("escape", token=token), timeout=10.0)
    finally:
        helper = int(pid_path(token).read_text())
        pid_path(token).unlink()
        os.kill(helper, signal.SIGKILL)
    assert result.state is DemoState.SUCCEEDED and result.report == "escaped"
    assert time.monotonic() - start < 5.0  # the pipe's grace (1 s), not the helper's life
    assert fault_executor.run(job("crash")).error == "RuntimeError: boom"  # still serving


def test_demo_that_raises_is_reported_with_its_error(fault_executor: Executor) -> None:
    result = fault_executor.run(job("crash"))
    assert result.state is DemoState.FAILED
    assert result.error == "RuntimeError: boom"


def test_demo_that_exits_nonzero_is_reported(fault_executor: Executor) -> None:
    result = fault_executor.run(job("exit"))
    assert result.state is DemoState.FAILED
    assert "exited with status 3" in result.error


def test_demo_killed_by_sigkill_is_reported_as_a_probable_oom_kill(
    fault_executor: Executor,
) -> None:
    result = fault_executor.run(job("sigkill"))
    assert result.state is DemoState.FAILED
    assert "killed by SIGKILL" in result.error
    assert "out-of-memory killer" in result.error


def test_output_beyond_the_cap_stops_the_demo(fault_executor: Executor) -> None:
    result = fault_executor.run(job("flood", kib=4096))  # 4 MiB against a 256 KiB cap
    assert result.state is DemoState.FAILED
    assert "byte limit" in result.error


def test_output_under_the_cap_is_fine(fault_executor: Executor) -> None:
    assert fault_executor.run(job("flood", kib=16)).state is DemoState.SUCCEEDED


def test_unknown_demo_and_out_of_range_parameter_are_refused_before_anything_runs(
    fault_executor: Executor,
) -> None:
    with pytest.raises(DemoRequestError, match=r"unknown demo 'nope'.*fragmentation"):
        fault_executor.submit(job("nope"))
    with pytest.raises(DemoRequestError, match=r"blocks=99 is out of range; use 4\.\.32"):
        fault_executor.submit(job("fragmentation", blocks=99))
    with pytest.raises(DemoRequestError, match="unknown parameter 'x'"):
        fault_executor.submit(job("fragmentation", x=1))
    assert not fault_executor._inflight and not fault_executor._waiting


def test_secrets_never_reach_the_demo_process(monkeypatch: pytest.MonkeyPatch) -> None:
    names = [
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "DISCORD_TOKEN",
        "QUIZBOT_DATABASE_URL",
        "GITHUB_TOKEN",
        "SOME_SECRET",
        "AWS_ACCESS_KEY_ID",
        "LC_API_TOKEN",
    ]
    secrets = {name: f"secret-value-{i}-do-not-leak" for i, name in enumerate(names)}
    for key, value in secrets.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "garbage_from_the_parent")
    with Executor(ExecutorConfig(registry=SOURCE, torch=False)) as ex:
        env = ex.run(job("env")).metrics["env"]
    assert not set(secrets) & set(env)
    assert not any(secrets[k] in v for k in secrets for v in env.values())
    assert env["LC_ALL"] == "C.UTF-8"
    assert "PATH" in env
    # Set per demo from the registry, never inherited from the bot's environment.
    assert env["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"


def test_every_demo_runs_in_a_fresh_process(fault_executor: Executor) -> None:
    first = fault_executor.run(job("env")).metrics
    second = fault_executor.run(job("env")).metrics
    assert first["pid"] != second["pid"]
    assert first["ppid"] == second["ppid"] != os.getpid()  # both forked by the server


def test_without_a_gpu_one_demo_runs_at_a_time(
    fault_executor: Executor, token: int, open_gate: Callable[[int], None]
) -> None:
    first = fault_executor.submit(job("gate", token=token))
    second = fault_executor.submit(job("gate", token=token + 1))
    eventually_sync(first.started.done, timeout=10.0, what="the first demo to start")
    assert not second.started.done()  # queued behind the first, not running
    open_gate(token)
    assert first.result(10.0).state is DemoState.SUCCEEDED
    open_gate(token + 1)
    assert second.result(10.0).state is DemoState.SUCCEEDED


def test_a_dead_fork_server_fails_what_ran_and_is_restarted(token: int) -> None:
    with Executor(ExecutorConfig(registry=SOURCE, torch=False)) as ex:
        running = ex.submit(job("gate", token=token))
        eventually_sync(running.started.done, timeout=10.0, what="the demo to start")
        # Started is when the server forked it; its pid file is written a moment later.
        pid_text = eventually_sync(
            lambda: gate_pid_path(token).exists() and gate_pid_path(token).read_text().strip(),
            timeout=10.0,
            what="the demo to write its pid",
        )
        assert ex._proc is not None
        ex._proc.kill()
        result = running.result(10.0)
        assert result.state is DemoState.FAILED
        assert "fork server stopped unexpectedly" in result.error
        # The orphaned demo died with its server (it would otherwise wait for its gate).
        demo_pid = int(pid_text)
        gate_pid_path(token).unlink()
        eventually_sync(lambda: _dead(demo_pid), timeout=5.0, what="the orphaned demo to die")
        eventually_sync(lambda: ex._proc is None, timeout=10.0, what="the reader to notice")
        assert ex.run(job("env")).state is DemoState.SUCCEEDED
