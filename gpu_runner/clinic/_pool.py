"""Replaying several configurations at once on forked workers (one per CPU core).

Each configuration's replay is independent and CPU-bound, and the simulator is pure
Python, so processes — not threads — use the cores. The workers are forked from the clinic
child after the trace is compiled and share it copy-on-write; each replays every K-th
configuration and sends back one JSON line per result. No threads are started here, so
forking is safe. The clinic child runs in its own process group: the runner's timeout
kills the workers with it.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import selectors
import signal
from collections.abc import Callable, Sequence

from gpu_runner.clinic._program import TraceProgram
from gpu_runner.clinic._replay import ConfigRun, replay_program
from gpu_runner.sim import AllocatorConfig

READ = 1 << 16


class WorkerError(RuntimeError):
    """A replay worker failed or died; the message says how."""


def default_workers() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


def replay_all(
    program: TraceProgram,
    configs: Sequence[AllocatorConfig],
    total_memory: int,
    *,
    workers: int = 1,
    on_done: Callable[[], None] = lambda: None,
) -> list[ConfigRun]:
    """Replay `program` under each configuration; `on_done` after each one finishes."""
    workers = min(workers, len(configs))
    if workers <= 1:
        runs = []
        for config in configs:
            runs.append(replay_program(program, config, total_memory))
            on_done()
        return runs
    results: dict[int, ConfigRun] = {}
    pipes: dict[int, tuple[int, bytearray]] = {}  # read fd -> (pid, buffer)
    statuses: list[int] = []
    finished = False
    try:
        for k in range(workers):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the worker
                for fd in pipes:
                    os.close(fd)
                os.close(r)
                _work(program, configs, total_memory, range(k, len(configs), workers), w)
            os.close(w)
            pipes[r] = (pid, bytearray())
        _collect(pipes, results, on_done)
        finished = True
    finally:
        for fd, (pid, _) in pipes.items():
            os.close(fd)
            if not finished:  # an error here: the others' work is not wanted any more
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            statuses.append(os.waitpid(pid, 0)[1])
    missing = [i for i in range(len(configs)) if i not in results]
    if missing:
        raise WorkerError(
            f"a replay worker stopped early ({_describe(statuses)}); configurations "
            f"{missing} were not replayed"
        )
    return [results[i] for i in range(len(configs))]


def _work(
    program: TraceProgram,
    configs: Sequence[AllocatorConfig],
    total_memory: int,
    indexes: range,
    fd: int,
) -> None:  # pragma: no cover - runs in the worker
    # A replay leaves only a few thousand cyclic objects (its allocator's block chains),
    # and a worker lives for a few replays: the collector's passes would cost more.
    gc.disable()
    code = 0
    try:
        for i in indexes:
            try:
                run = replay_program(program, configs[i], total_memory)
                line = json.dumps({"index": i, "run": run.to_json()})
            except MemoryError:
                line = json.dumps({"index": i, "error": "MemoryError"})
            _write(fd, line.encode() + b"\n")
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _write(fd: int, data: bytes) -> None:  # pragma: no cover - runs in the worker
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _collect(
    pipes: dict[int, tuple[int, bytearray]],
    results: dict[int, ConfigRun],
    on_done: Callable[[], None],
) -> None:
    sel = selectors.DefaultSelector()
    for fd in pipes:
        sel.register(fd, selectors.EVENT_READ)
    open_fds = len(pipes)
    try:
        while open_fds:
            for key, _ in sel.select():
                fd = int(key.fd)
                chunk = os.read(fd, READ)
                if not chunk:
                    sel.unregister(fd)
                    open_fds -= 1
                    continue
                buf = pipes[fd][1]
                buf += chunk
                while b"\n" in buf:
                    line, _, rest = bytes(buf).partition(b"\n")
                    buf[:] = rest
                    doc = json.loads(line)
                    if "error" in doc:
                        if doc["error"] == "MemoryError":
                            raise MemoryError("a replay ran out of memory")
                        raise WorkerError(str(doc["error"]))
                    results[int(doc["index"])] = ConfigRun.from_json(doc["run"])
                    on_done()
    finally:
        sel.close()


def _describe(statuses: list[int]) -> str:
    parts = []
    for status in statuses:
        if os.WIFSIGNALED(status):
            parts.append(f"killed by {signal.Signals(os.WTERMSIG(status)).name}")
        elif os.WEXITSTATUS(status):
            parts.append(f"exit status {os.WEXITSTATUS(status)}")
    return ", ".join(parts) or "no error reported"
