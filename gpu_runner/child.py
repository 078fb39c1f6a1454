"""One demo, inside a freshly forked child of the fork server.

The child applies its environment before anything touches CUDA (the allocator reads
``PYTORCH_CUDA_ALLOC_CONF`` once per process, and the fork server never initialised
CUDA), caps what it may use, runs the demo and writes JSON lines to its result pipe:
``{"kind": "started", ...}`` when the demo code begins, ``{"kind": "result", ...}`` at the end.
"""

from __future__ import annotations

import base64
import importlib
import os
import resource
import sys
import time
import traceback
from collections.abc import Mapping
from typing import Any

from bot.domain import DemoState, Locale
from bot.errors import MissingExtraError
from gpu_runner.demos._alloc import set_allocator_settings
from gpu_runner.demos._context import SIMULATED_DEVICE, DemoOutput, RunContext
from gpu_runner.demos._registry import DemoKind, DemoRequestError, Registry
from gpu_runner.wire import dumps, json_safe

MiB = 1 << 20
# Held while the demo runs, freed when it meets its memory cap: room to report that.
MEMORY_RESERVE = 1 * MiB


def write_line(fd: int, data: Mapping[str, Any]) -> None:
    """One JSON line on the result pipe."""
    payload = dumps(data)
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]


def cap_host_memory(nbytes: int) -> None:
    """Limit address space growth beyond what the preloaded libraries already map."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[0])
        current = pages * os.sysconf("SC_PAGE_SIZE")
        limit = current + nbytes
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (OSError, ValueError):
        pass  # not Linux: the timeout still bounds the demo


def _host_allocation_failed(exc: Exception) -> bool:
    """torch's CPU allocator reports a refused allocation as a RuntimeError."""
    return isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc)


def _failure(exc: Exception, device: str, gpu_cap: int) -> dict[str, Any]:
    first = (str(exc).splitlines() or [""])[0][:500]
    if type(exc).__name__ == "OutOfMemoryError":
        cap = f" (cap {gpu_cap // MiB} MiB)" if gpu_cap else ""
        error = f"ran out of GPU memory{cap}: {first}"
    else:
        error = f"{type(exc).__name__}: {first}"
    return {"kind": "result", "state": DemoState.FAILED.value, "device": device, "error": error}


def apply_environment(request: Mapping[str, Any], base_env: Mapping[str, str]) -> None:
    """The allow-listed environment plus the request's own; no core dumps."""
    os.environ.clear()
    os.environ.update(base_env)
    os.environ.update(request.get("env") or {})
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_child(
    request: Mapping[str, Any], result_fd: int, registry: Registry, base_env: Mapping[str, str]
) -> int:
    """Run one request; returns the exit status for ``os._exit``."""
    apply_environment(request, base_env)
    demo_id = str(request["demo"])
    try:
        demo = registry[demo_id]
        params = registry.check(demo_id, request.get("params") or {})
    except (KeyError, DemoRequestError) as exc:
        write_line(
            result_fd,
            {"kind": "result", "state": DemoState.FAILED.value, "error": str(exc), "device": ""},
        )
        return 0
    simulate = bool(request.get("simulate"))
    torch: Any = sys.modules.get("torch")  # preloaded by the fork server
    # Without a preload, a simulated allocator demo does not pay for importing torch.
    wanted = not (simulate and demo.kind is DemoKind.ALLOCATOR)
    if torch is None and wanted and not request.get("no_torch"):
        try:
            torch = importlib.import_module("torch")
        except ImportError:
            torch = None
    # Only now may CUDA be touched: the environment above is in place.
    cuda = bool(torch is not None and not simulate and torch.cuda.is_available())
    gpu_cap = request.get("gpu_memory_cap")
    if cuda:
        conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
        if conf:  # also at run time, in case importing torch already read the variable
            set_allocator_settings(torch, conf)
        if gpu_cap:
            total = torch.cuda.get_device_properties(0).total_memory
            torch.cuda.set_per_process_memory_fraction(min(1.0, int(gpu_cap) / total))
    elif request.get("host_memory_cap"):
        cap_host_memory(int(request["host_memory_cap"]))
    ctx = RunContext(
        demo_id,
        Locale(request.get("locale", "en")),
        params,
        simulate,
        torch,
        cuda,
        int(gpu_cap) if gpu_cap else None,
    )
    device = SIMULATED_DEVICE if demo.kind is DemoKind.ALLOCATOR and not cuda else ctx.device_line()
    write_line(result_fd, {"kind": "started", "at": time.time(), "device": device})
    host_cap = int(request.get("host_memory_cap") or 0) if not cuda else 0
    reserve = bytearray(MEMORY_RESERVE)
    out: DemoOutput | None = None  # None: the demo met its memory cap
    try:
        out = demo.run(ctx)
    except MissingExtraError as exc:
        write_line(
            result_fd,
            {
                "kind": "result",
                "state": DemoState.FAILED.value,
                "error": str(exc),
                "device": device,
            },
        )
        return 0
    except MemoryError:
        pass  # leaving this block releases the demo's frames (the traceback holds them)
    except Exception as exc:
        if not _host_allocation_failed(exc):
            traceback.print_exc()  # to the log pipe: the server keeps its tail
            write_line(result_fd, _failure(exc, device, int(gpu_cap) if gpu_cap else 0))
            return 1
    if out is None:
        del reserve  # room to report
        cap = f" (cap {host_cap // MiB} MiB)" if host_cap else ""
        error = f"ran out of memory{cap}: the demo needed more host memory than it may use"
        write_line(
            result_fd,
            {"kind": "result", "state": DemoState.FAILED.value, "device": device, "error": error},
        )
        return 1
    write_line(
        result_fd,
        {
            "kind": "result",
            "state": DemoState.SUCCEEDED.value,
            "device": out.device or device,
            "report": out.report,
            "metrics": json_safe({**out.metrics, "simulated": out.simulated}),
            "png_b64": base64.b64encode(out.png).decode("ascii") if out.png else None,
            "simulated": out.simulated,
        },
    )
    return 0
