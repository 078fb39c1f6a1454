"""The executor: runs registered demos in children of a fork server, one per demo.

`Executor` is the synchronous, thread-safe client used by both backends (the local runner
in the bot process, the Celery worker on a GPU host). It validates every request against
the registry before anything runs, keeps at most one demo per GPU (or one in all without
a GPU), and turns whatever happened in the child — a result, a crash, a timeout, an
output flood — into a `DemoResult`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import TracebackType
from typing import IO, Any, Self

from bot.domain import DemoJob, DemoResult, DemoState
from gpu_runner.demos import DEFAULT_REGISTRY, SIMULATED_DEVICE, Registry, load_registry
from gpu_runner.environment import demo_environment, per_demo_environment
from gpu_runner.isolation import DEFAULT_DEMO_USER, demo_credentials, make_non_dumpable
from gpu_runner.wire import CLINIC, ClinicRequest, dumps, result_from_payload

log = logging.getLogger(__name__)

MiB = 1 << 20
GiB = 1 << 30


@dataclass(frozen=True, slots=True)
class ExecutorConfig:
    registry: str = DEFAULT_REGISTRY  # "module:factory"; the fork server builds the same one
    timeout: float = 60.0  # seconds per demo (a demo's own limit applies when smaller)
    # a 100 MiB snapshot (~1.8 M events) needs ~15 s of CPU: room for a loaded host
    clinic_timeout: float = 120.0
    output_cap: int = 8 * MiB  # result JSON (PNG included) and log output, each
    gpu_memory_cap: int = 16 * GiB  # per demo, through set_per_process_memory_fraction
    host_memory_cap: int = 8 * GiB  # address space a CPU-only demo may add
    concurrency: int | None = None  # default: one per GPU, or 1
    preload_torch: bool = True  # import torch in the fork server (else in a child, if needed)
    torch: bool = True  # False: demos run as if torch were not installed (tests)
    start_timeout: float = 120.0  # importing torch on a cold disk is slow
    python: str = sys.executable
    extra_env: dict[str, str] = field(default_factory=dict)  # allow-listed names only
    # Started as root, demos run as this user (a name or uid[:gid]), never as root: with
    # None, or a user who cannot run Python here, they are refused (gpu_runner.isolation).
    demo_user: str | None = DEFAULT_DEMO_USER


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    torch: str | None
    gpus: int
    names: tuple[str, ...]
    cuda: str | None
    preload_s: float = 0.0
    isolation: str = ""  # who demos run as, e.g. "uid 65534, no capabilities"
    refused: str = ""  # why demos cannot run on this host, and the fix (else empty)

    @property
    def line(self) -> str:
        """What the bot says while a demo runs: "NVIDIA H200 · torch 2.13.0 · CUDA 13.0"."""
        if self.gpus and self.names:
            return f"{self.names[0]} · torch {self.torch} · CUDA {self.cuda}"
        return SIMULATED_DEVICE

    @property
    def has_gpu(self) -> bool:
        return self.gpus > 0


class Execution:
    """One submitted demo: `started` resolves to the device line, `done` to the result."""

    def __init__(
        self,
        key: str,
        job: DemoJob,
        message: dict[str, Any],
        on_progress: Callable[[Mapping[str, Any]], None] | None = None,
    ) -> None:
        self.key = key
        self.job = job
        self.message = message
        self.on_progress = on_progress  # called on the reader thread with each progress line
        self.payload: Mapping[str, Any] = {}  # the child's result document, as received
        self.submitted_at = time.time()
        self.started: Future[str] = Future()
        self.done: Future[DemoResult] = Future()
        self.started_at: float | None = None  # the child's clock when demo code began
        self.gpu: int | None = None

    def result(self, timeout: float | None = None) -> DemoResult:
        return self.done.result(timeout)


class ExecutorClosed(RuntimeError):
    pass


class Executor:
    def __init__(
        self, config: ExecutorConfig | None = None, registry: Registry | None = None
    ) -> None:
        self.config = config or ExecutorConfig()
        self.registry = registry or load_registry(self.config.registry)
        if self.registry.source and self.registry.source != self.config.registry:
            raise ValueError(
                f"registry {self.registry.source!r} differs from config.registry "
                f"{self.config.registry!r}: the fork server would run other demos"
            )
        self._lock = threading.RLock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._info: DeviceInfo | None = None
        self._hello = threading.Event()
        self._inflight: dict[str, Execution] = {}
        self._waiting: deque[Execution] = deque()
        self._free_slots: list[int | None] = []
        self._seq = 0
        self._closed = False
        self._reader: threading.Thread | None = None

    # -- life cycle ---------------------------------------------------------------------

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def info(self) -> DeviceInfo:
        return self.start()

    def start(self) -> DeviceInfo:
        """Start the fork server (once) and wait for its hello."""
        with self._lock:
            if self._closed:
                raise ExecutorClosed("the executor is closed")
            if self._proc is not None and self._proc.poll() is None and self._info:
                return self._info
            self._spawn()
        if not self._hello.wait(self.config.start_timeout):
            self.close()
            raise RuntimeError(
                f"the demo fork server did not start within {self.config.start_timeout:g} s"
            )
        assert self._info is not None
        return self._info

    def _spawn(self) -> None:
        # This process holds the secrets (bot tokens, database URL): demos must not be able
        # to read its /proc/<pid>/environ (see gpu_runner.isolation).
        make_non_dumpable("process that runs demos")
        creds = demo_credentials(self.config.demo_user)
        env = demo_environment(os.environ, self.config.extra_env)
        # The child must import this very code base, wherever the bot runs from.
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        cmd = [
            self.config.python,
            "-m",
            "gpu_runner.forkserver",
            "--registry",
            self.config.registry,
        ]
        if creds is not None:
            cmd += ["--demo-user", creds.as_argument()]
        if not self.config.torch:
            cmd.append("--no-torch")
        elif not self.config.preload_torch:
            cmd.append("--no-preload")
        self._hello.clear()
        self._info = None
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=root,
            start_new_session=True,  # Ctrl-C in the bot's terminal is the bot's to handle
        )
        self._reader = threading.Thread(
            target=self._read, args=(self._proc,), name="demo-forkserver-reader", daemon=True
        )
        self._reader.start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            proc, self._proc = self._proc, None
            waiting = list(self._waiting)
            self._waiting.clear()
        for ex in waiting:
            self._finish(ex, _failure(ex.job, "the runner shut down before the demo started"))
        if proc is None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.close()  # EOF: the server kills its children and exits
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=5)

    # -- submitting ---------------------------------------------------------------------

    def submit(self, job: DemoJob, timeout: float | None = None) -> Execution:
        """Queue a demo. Unknown demos and bad parameters raise `DemoRequestError` here,
        before anything runs."""
        params = self.registry.check(job.demo, job.params)
        demo = self.registry[job.demo]
        limit = min(x for x in (timeout, demo.timeout, self.config.timeout) if x is not None)
        message = {
            "demo": job.demo,
            "params": params,
            "locale": str(job.locale),
            "simulate": job.simulate,
            "timeout": limit,
            "output_cap": self.config.output_cap,
            "gpu_memory_cap": self.config.gpu_memory_cap,
            "host_memory_cap": self.config.host_memory_cap,
            "alloc_conf": demo.alloc_conf,
        }
        return self._enqueue(job, message)

    def submit_clinic(
        self,
        request: ClinicRequest,
        on_progress: Callable[[Mapping[str, Any]], None] | None = None,
    ) -> Execution:
        """Queue a memory-clinic run on the snapshot at `request.path` (a file this host
        can read; the caller deletes it afterwards). `on_progress` gets each progress
        line of the child (on the executor's reader thread)."""
        job = DemoJob(0, CLINIC, request.locale)
        message = {
            "task": "clinic",
            "path": request.path,
            "name": request.name,
            "max_bytes": request.max_bytes,
            "gpu_memory": request.gpu_memory,
            "locale": str(request.locale),
            "timeout": self.config.clinic_timeout,
            "output_cap": self.config.output_cap,
            "host_memory_cap": self.config.host_memory_cap,
        }
        return self._enqueue(job, message, on_progress)

    def _enqueue(
        self,
        job: DemoJob,
        message: dict[str, Any],
        on_progress: Callable[[Mapping[str, Any]], None] | None = None,
    ) -> Execution:
        info = self.start()
        with self._lock:
            self._seq += 1
            key = f"{job.run_id}-{self._seq}"
            message = {"op": "run", "id": key, **message}
            ex = Execution(key, job, message, on_progress)
            if not self._free_slots and not self._inflight and not self._waiting:
                n = self.config.concurrency or info.gpus or 1
                self._free_slots = [i if info.gpus else None for i in range(n)]
            self._waiting.append(ex)
            self._dispatch()
        return ex

    def run(self, job: DemoJob, timeout: float | None = None) -> DemoResult:
        """Submit and wait (the queue wait is not part of `timeout`)."""
        return self.submit(job, timeout).result()

    def _dispatch(self) -> None:
        while self._waiting and self._free_slots and self._proc is not None:
            ex = self._waiting.popleft()
            ex.gpu = self._free_slots.pop(0)
            ex.message["env"] = per_demo_environment(
                os.environ, str(ex.message.pop("alloc_conf", "")), ex.gpu
            )
            self._inflight[ex.key] = ex
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write(dumps(ex.message))
                self._proc.stdin.flush()
            except (OSError, ValueError):
                pass  # the reader sees the server die and fails what is in flight

    # -- replies ------------------------------------------------------------------------

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        stream: IO[bytes] | None = proc.stdout
        assert stream is not None
        for line in stream:
            try:
                msg = json.loads(line)
            except ValueError:
                log.warning("fork server sent a line that is not JSON: %r", line[:200])
                continue
            self._on_message(msg)
        proc.wait()
        stream.close()
        if proc.stdin is not None:
            with contextlib.suppress(OSError):  # a broken pipe to a dead server
                proc.stdin.close()
        with self._lock:
            lost = list(self._inflight.values())
            self._inflight.clear()
            if self._proc is proc:
                self._proc = None
            self._free_slots = []
            waiting_restart = bool(self._waiting) and not self._closed
        self._hello.set()  # wake a start() that waits on a server that died
        for ex in lost:
            self._finish(
                ex,
                _failure(
                    ex.job,
                    "the demo runner's fork server stopped "
                    f"unexpectedly (exit status {proc.returncode})",
                ),
            )
        if waiting_restart:
            threading.Thread(target=self._restart_for_waiting, daemon=True).start()

    def _restart_for_waiting(self) -> None:
        try:
            info = self.start()
        except (RuntimeError, ExecutorClosed) as exc:
            with self._lock:
                waiting = list(self._waiting)
                self._waiting.clear()
            for ex in waiting:
                self._finish(ex, _failure(ex.job, f"the demo runner could not restart: {exc}"))
            return
        with self._lock:
            n = self.config.concurrency or info.gpus or 1
            self._free_slots = [i if info.gpus else None for i in range(n)]
            self._dispatch()

    def _on_message(self, msg: dict[str, Any]) -> None:
        op = msg.get("op")
        if op == "hello":
            self._info = DeviceInfo(
                torch=msg.get("torch"),
                gpus=int(msg.get("gpus") or 0),
                names=tuple(msg.get("names") or ()),
                cuda=msg.get("cuda"),
                preload_s=float(msg.get("preload_s") or 0.0),
                isolation=str(msg.get("isolation") or ""),
                refused=str(msg.get("refused") or ""),
            )
            if self._info.refused:
                log.warning("demo fork server ready, but demos are refused: %s", self._info.refused)
            else:
                log.info("demo fork server ready; demos run as %s", self._info.isolation)
            self._hello.set()
            return
        with self._lock:
            ex = self._inflight.get(str(msg.get("id")))
        if ex is None:
            return
        if op == "progress":
            if ex.on_progress is not None:
                ex.on_progress(msg.get("progress") or {})
        elif op == "started":
            ex.started_at = msg.get("at")
            if not ex.started.done():
                ex.started.set_result(str(msg.get("device") or ""))
        elif op == "result":
            data = msg.get("result") or {}
            ex.started_at = data.get("started_at", ex.started_at)
            ex.payload = data
            result = result_from_payload(ex.job.run_id, ex.job.demo, data)
            with self._lock:
                self._inflight.pop(ex.key, None)
                self._free_slots.append(ex.gpu)
                self._dispatch()
            self._finish(ex, result)

    def _finish(self, ex: Execution, result: DemoResult) -> None:
        if not ex.started.done():
            ex.started.set_result(result.device)
        if not ex.done.done():
            ex.done.set_result(result)


def _failure(job: DemoJob, error: str) -> DemoResult:
    return DemoResult(job.run_id, job.demo, DemoState.FAILED, device="", error=error)


__all__ = [
    "DeviceInfo",
    "Execution",
    "Executor",
    "ExecutorClosed",
    "ExecutorConfig",
]
