"""The fork server: preloads torch and matplotlib once, then forks one child per demo.

Run as ``python -m gpu_runner.forkserver --registry MODULE:FACTORY ...`` with the
allow-listed environment (see `gpu_runner.environment`). Requests arrive as JSON lines on
stdin; replies (hello, started, result) leave as JSON lines on the original stdout, which
is moved to a private descriptor so that stray prints from libraries cannot corrupt it.

The loop is single-threaded on purpose: forking a process that runs threads can leave a
child holding a lock that nobody will release. CUDA is never initialised here; a probe
child reports the GPUs, and each demo child initialises CUDA itself after applying its
environment.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import selectors
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpu_runner.demos import load_registry
from gpu_runner.demos._registry import Registry
from gpu_runner.isolation import DemoCredentials, DemoIsolation, make_non_dumpable, plan_isolation
from gpu_runner.wire import dumps

LOG_TAIL = 16 * 1024
SHORT_LINE = 4096  # started and progress lines are far shorter
READ = 65536
REAP_POLL = 0.005  # how often an exiting or killed child is waited for
# A demo's pipes can outlive it: a process it started in a session of its own is out of
# reach of the kill of its group. Once the demo itself is reaped, its pipes get this long to
# close before the server closes its own ends and reports.
PIPE_GRACE = 1.0
SHUTDOWN_GRACE = 5.0  # after the bot goes away; children die with the server (PDEATHSIG)


@dataclass(slots=True)
class Child:
    key: str
    pid: int
    result_fd: int
    log_fd: int
    deadline: float
    timeout: float
    output_cap: int
    result: bytearray = field(default_factory=bytearray)
    log: bytearray = field(default_factory=bytearray)
    log_total: int = 0
    killed: str = ""  # "timeout" | "output" when we killed it
    status: int | None = None
    reaped_at: float = 0.0
    open_fds: int = 2
    result_open: bool = True  # its result pipe closes as it exits
    started: dict[str, Any] | None = None
    scanned: int = 0  # bytes of `result` already searched for complete lines
    line_start: int = 0  # where the first line not yet forwarded begins


def preload(use_torch: bool) -> dict[str, Any]:
    """Import what every demo needs, so a forked child starts with it in memory."""
    info: dict[str, Any] = {"torch": None}
    t0 = time.perf_counter()
    if use_torch:
        try:
            torch: Any = importlib.import_module("torch")
            # torch._dynamo is imported lazily by the first op under a dispatch mode: 4 s.
            for name in ("torch._dynamo", "torch.utils._python_dispatch", "torch.utils.checkpoint"):
                importlib.import_module(name)
            info["torch"] = str(torch.__version__)
        except ImportError:
            pass
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    # Rendering text once builds the font cache here instead of in every child.
    fig = Figure(figsize=(1, 1))
    fig.subplots().set_title("x · \u03ac")  # a Greek accented letter
    fig.savefig(io.BytesIO(), format="png")
    import gpu_runner.clinic.analysis
    import gpu_runner.sim  # noqa: F401

    info["preload_s"] = round(time.perf_counter() - t0, 3)
    return info


def probe_gpus(use_torch: bool) -> dict[str, Any]:
    """GPU count and names, from a throw-away child so this process never touches CUDA."""
    if not use_torch or "torch" not in sys.modules:
        return {"gpus": 0, "names": [], "cuda": None}
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the probe child
        code = 0
        try:
            os.close(r)
            torch: Any = importlib.import_module("torch")
            n = torch.cuda.device_count() if torch.cuda.is_available() else 0
            names = [torch.cuda.get_device_name(i) for i in range(n)]
            os.write(w, dumps({"gpus": n, "names": names, "cuda": torch.version.cuda}))
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    data = b""
    while chunk := os.read(r, READ):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    try:
        info: dict[str, Any] = json.loads(data)
    except ValueError:
        info = {"gpus": 0, "names": [], "cuda": None, "probe_error": True}
    return info


class Server:
    def __init__(
        self,
        registry: Registry,
        out_fd: int,
        base_env: Mapping[str, str],
        use_torch: bool = True,
        isolation: DemoIsolation | None = None,
    ) -> None:
        self.registry = registry
        self.isolation = isolation
        self.use_torch = use_torch
        self.out_fd = out_fd
        self.base_env = dict(base_env)
        self.sel = selectors.DefaultSelector()
        self.children: dict[int, Child] = {}  # by pid
        self.by_fd: dict[int, tuple[Child, str]] = {}
        self.inbuf = bytearray()
        self.running = True
        self.stop_by = float("inf")  # once the bot has gone: when to stop waiting for children

    def send(self, data: Mapping[str, Any]) -> None:
        view = memoryview(dumps(data))
        try:
            while view:
                view = view[os.write(self.out_fd, view) :]
        except BrokenPipeError:  # the bot went away: nobody is left to tell
            self.running = False

    # -- requests -----------------------------------------------------------------------

    def serve(self) -> None:
        self.sel.register(0, selectors.EVENT_READ, "stdin")
        while self.running or (self.children and time.monotonic() < self.stop_by):
            timeout = self._next_timeout()
            for key, _ in self.sel.select(timeout):
                if key.data == "stdin":
                    self._read_stdin()
                else:
                    self._read_child(key.fd)
            self._enforce_deadlines()
            self._reap()
        self.sel.close()

    def _next_timeout(self) -> float | None:
        if not self.children:
            return None
        now = time.monotonic()
        return max(0.0, min(self._wake_for(c, now) for c in self.children.values()))

    @staticmethod
    def _wake_for(child: Child, now: float) -> float:
        if child.status is not None:  # reaped; something outside its group holds a pipe
            return child.reaped_at + PIPE_GRACE - now
        if not child.result_open or child.killed:  # exiting, or killed: wait for it soon
            return REAP_POLL
        return child.deadline - now

    def _read_stdin(self) -> None:
        chunk = os.read(0, READ)
        if not chunk:  # the parent went away: stop everything
            self.sel.unregister(0)
            self.running = False
            self.stop_by = time.monotonic() + SHUTDOWN_GRACE
            for child in self.children.values():
                self._kill(child, "shutdown")
            return
        self.inbuf += chunk
        while b"\n" in self.inbuf:
            line, _, rest = self.inbuf.partition(b"\n")
            self.inbuf = bytearray(rest)
            if line.strip():
                self._handle(json.loads(line))

    def _handle(self, msg: dict[str, Any]) -> None:
        if msg.get("op") == "ping":
            self.send({"op": "pong", "children": len(self.children)})
        elif msg.get("op") == "run":
            self._fork({**msg, "no_torch": not self.use_torch})

    def _fork(self, msg: dict[str, Any]) -> None:
        self_pid = os.getpid()
        result_r, result_w = os.pipe()
        log_r, log_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the demo child
            code = 1
            try:
                os.setsid()  # its own process group: a timeout kills everything it started
                if self.isolation is not None:
                    if msg.get("task") == "clinic" and self.isolation.switch_to is not None:
                        msg = {**msg, "path": _readable_copy(msg)}
                    _isolate(self.isolation, result_w)
                os.chdir("/")  # not the bot's directory, where its SQLite file may be
                _die_with_parent(self_pid)  # after the switch: a uid change clears it
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                devnull = os.open(os.devnull, os.O_RDONLY)
                os.dup2(devnull, 0)
                os.dup2(log_w, 1)
                os.dup2(log_w, 2)
                for fd in (result_r, log_r, log_w, devnull, self.out_fd):
                    os.close(fd)
                for fd in list(self.by_fd):
                    os.close(fd)
                if msg.get("task") == "clinic":
                    from gpu_runner.clinic.child import run_clinic_child

                    code = run_clinic_child(msg, result_w, self.base_env)
                else:
                    from gpu_runner.child import run_child

                    code = run_child(msg, result_w, self.registry, self.base_env)
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        os.close(result_w)
        os.close(log_w)
        timeout = float(msg.get("timeout", 60.0))
        child = Child(
            str(msg["id"]),
            pid,
            result_r,
            log_r,
            time.monotonic() + timeout,
            timeout,
            int(msg.get("output_cap", 8 << 20)),
        )
        self.children[pid] = child
        for fd, kind in ((result_r, "result"), (log_r, "log")):
            self.by_fd[fd] = (child, kind)
            self.sel.register(fd, selectors.EVENT_READ, kind)

    # -- children -----------------------------------------------------------------------

    def _read_child(self, fd: int) -> None:
        child, kind = self.by_fd[fd]
        chunk = os.read(fd, READ)
        if not chunk:
            self._close_pipe(fd)
            return
        if kind == "result":
            child.result += chunk
            if len(child.result) > child.output_cap:
                self._kill(child, "output")
            self._forward_lines(child)
        else:
            child.log_total += len(chunk)
            child.log = (child.log + chunk)[-LOG_TAIL:]
            if child.log_total > child.output_cap:
                self._kill(child, "output")

    def _close_pipe(self, fd: int) -> None:
        child, _ = self.by_fd.pop(fd)
        self.sel.unregister(fd)
        os.close(fd)
        child.open_fds -= 1
        child.result_open = child.result_open and fd != child.result_fd

    def _forward_lines(self, child: Child) -> None:
        """Pass on ``started`` and ``progress`` lines as they complete (the final result
        line, PNG included, is sent once the child is done)."""
        while True:
            end = child.result.find(b"\n", max(child.scanned, child.line_start))
            if end < 0:
                child.scanned = len(child.result)  # search only new bytes next time
                return
            start, child.line_start = child.line_start, end + 1
            child.scanned = end + 1
            if end - start > SHORT_LINE:  # the result itself (a PNG inside): read at the end
                continue
            line = bytes(child.result[start:end])
            try:
                data = json.loads(line)
            except ValueError:
                continue
            kind = data.get("kind")
            if kind == "started" and child.started is None:
                child.started = data
                self.send(
                    {
                        "op": "started",
                        "id": child.key,
                        "at": data.get("at"),
                        "device": data.get("device", ""),
                    }
                )
            elif kind == "progress":
                self.send({"op": "progress", "id": child.key, "progress": data})

    def _kill(self, child: Child, why: str) -> None:
        if child.killed or child.status is not None:
            return
        child.killed = why
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:  # killed before its setsid(): it has no group (nor children)
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGKILL)

    def _enforce_deadlines(self) -> None:
        now = time.monotonic()
        for child in self.children.values():
            if now >= child.deadline and child.status is None:
                self._kill(child, "timeout")

    def _reap(self) -> None:
        for pid, child in list(self.children.items()):
            if child.status is None:
                try:
                    done, status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done, status = pid, 0
                if done:
                    child.status = status
                    child.reaped_at = time.monotonic()
                    if child.open_fds:
                        # Grandchildren may still hold the pipes: end the whole group.
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            os.killpg(pid, signal.SIGKILL)
            held = child.status is not None and child.open_fds
            if held and time.monotonic() >= child.reaped_at + PIPE_GRACE:
                # What still holds them left the group: read what is there, then let go.
                for fd in [fd for fd, (c, _) in self.by_fd.items() if c is child]:
                    self._drain(fd)
            if child.status is not None and child.open_fds == 0:
                del self.children[pid]
                self.send({"op": "result", "id": child.key, "result": self._outcome(child)})

    def _drain(self, fd: int) -> None:
        """Read what a pipe holds now, without waiting for the writer to close it."""
        os.set_blocking(fd, False)
        with contextlib.suppress(BlockingIOError):
            while self.by_fd.get(fd) is not None:
                self._read_child(fd)
        if fd in self.by_fd:
            self._close_pipe(fd)

    def _outcome(self, child: Child) -> dict[str, Any]:
        docs = []
        for line in bytes(child.result).splitlines():
            try:
                docs.append(json.loads(line))
            except ValueError:
                continue
        final = next((d for d in docs if d.get("kind") == "result"), None)
        device = (child.started or {}).get("device", "")
        tail = _tail(child.log)
        started_at = (child.started or {}).get("at")
        status = child.status or 0

        def failed(error: str, state: str = "failed", **more: Any) -> dict[str, Any]:
            base = {"state": state, "device": device, "started_at": started_at, "error": error}
            return base | more

        if child.killed == "timeout":
            return failed(
                f"did not finish within {child.timeout:g} s and was stopped", state="timed_out"
            )
        if child.killed == "output":
            return failed(f"its output passed the {child.output_cap} byte limit and it was stopped")
        if child.killed == "shutdown":
            return failed("the runner shut down before the demo finished")
        if final is not None:
            final = {k: v for k, v in final.items() if k != "kind"}
            final["started_at"] = started_at
            if not final.get("device"):
                final["device"] = device
            if final.get("state") == "failed" and tail and "error" in final:
                final["log_tail"] = tail
            return final
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            name = signal.Signals(sig).name
            why = (
                " — most likely the kernel's out-of-memory killer" if sig == signal.SIGKILL else ""
            )
            return failed(f"was killed by {name}{why}", log_tail=tail)
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
        last = tail.strip().splitlines()[-1] if tail.strip() else "no output"
        return failed(
            f"exited with status {code} before reporting a result ({last})", log_tail=tail
        )


def _readable_copy(msg: Mapping[str, Any]) -> str:
    """A clinic snapshot is a private file of the bot (mode 0600, in a private directory)
    that the demo user may not open: copied, while still root, into an in-memory file
    this child keeps open, it reaches the clinic as ``/proc/self/fd/N``. At most one byte
    past the cap is copied: the clinic's own size check then refuses it."""
    path = str(msg.get("path") or "")
    left = int(msg.get("max_bytes") or 0) + 1
    try:
        source = os.open(path, os.O_RDONLY)
    except OSError:
        return path  # the clinic says it cannot read the file
    try:
        copy = os.memfd_create("quizbot-snapshot")
        while left > 0 and (sent := os.sendfile(copy, source, None, min(left, 1 << 24))):
            left -= sent
    except OSError:
        return path
    finally:
        os.close(source)
    return f"/proc/self/fd/{copy}"


def _isolate(isolation: DemoIsolation, result_fd: int) -> None:
    """Drop root before any demo code runs; if that fails, report it and never run it."""
    try:
        isolation.apply()
    except OSError as exc:
        if isolation.refused is not None:
            error = f"not run: {isolation.refused}; nothing ran"
        else:
            error = f"could not isolate the demo ({isolation.description}): {exc}; nothing ran"
        payload = {"kind": "result", "state": "failed", "error": error, "device": ""}
        os.write(result_fd, dumps(payload))
        os._exit(1)


def _die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this child if the fork server dies (even by SIGKILL), so a crashed
    server leaves no demo running on its own."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the server died before prctl took effect
        os._exit(1)


def _tail(data: bytearray, lines: int = 12) -> str:
    text = bytes(data).decode("utf-8", "replace")
    return "\n".join(text.strip().splitlines()[-lines:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu_runner.forkserver")
    parser.add_argument("--registry", required=True)
    parser.add_argument("--no-torch", action="store_true", help="act as if torch were absent")
    parser.add_argument("--no-preload", action="store_true", help="children import torch")
    parser.add_argument("--demo-user", default=None, help="uid:gid[:groups] of demo children")
    args = parser.parse_args(argv)
    make_non_dumpable("demo fork server")
    # Keep the protocol on a private descriptor; anything printed goes to stderr.
    out_fd = os.dup(1)
    os.dup2(2, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    use_torch = not args.no_torch
    info = preload(use_torch and not args.no_preload)
    registry = load_registry(args.registry)
    info.update(probe_gpus(use_torch and not args.no_preload))
    creds = DemoCredentials.from_argument(args.demo_user) if args.demo_user else None
    isolation = plan_isolation(creds)
    info["isolation"] = isolation.description
    info["refused"] = isolation.refused
    server = Server(registry, out_fd, dict(os.environ), use_torch, isolation)
    server.send({"op": "hello", "pid": os.getpid(), "demos": registry.ids(), **info})
    server.serve()
    # Skip interpreter teardown (torch's takes seconds): nothing is left to flush.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
