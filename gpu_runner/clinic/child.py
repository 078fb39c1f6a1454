"""The clinic inside a freshly forked child of the fork server.

Same sandbox as a demo (allow-listed environment, no core dumps, an address-space cap,
the server's timeout and output cap, its own process group); CUDA is never touched. The
child reads the file the runner staged, writes ``started``, ``progress`` and one
``result`` JSON line, and leaves the file to the runner, which deletes it.
"""

from __future__ import annotations

import base64
import gc
import resource
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bot.clinic import ClinicStage, Rejection
from bot.domain import DemoState, Locale
from gpu_runner.child import apply_environment, cap_host_memory, write_line
from gpu_runner.clinic._input import Rejected, read_snapshot
from gpu_runner.clinic._pool import default_workers
from gpu_runner.clinic.analysis import analyse
from gpu_runner.wire import json_safe

CLINIC_DEVICE = "simulated allocator (snapshot replay), no GPU"


def run_clinic_child(
    request: Mapping[str, Any], result_fd: int, base_env: Mapping[str, str]
) -> int:
    """Analyse the snapshot at ``request["path"]``; returns the exit status."""
    apply_environment(request, base_env)
    host_cap = int(request.get("host_memory_cap") or 0)
    if host_cap:
        cap_host_memory(host_cap)
    write_line(result_fd, {"kind": "started", "at": time.time(), "device": CLINIC_DEVICE})
    at_fork = _rss_mib("VmRSS")  # what the fork server's pages already are
    name = str(request.get("name") or "snapshot.pickle")

    def progress(stage: ClinicStage, done: int = 0, total: int = 0) -> None:
        write_line(
            result_fd, {"kind": "progress", "stage": stage.value, "done": done, "total": total}
        )

    try:
        progress(ClinicStage.READING)
        started = time.perf_counter()
        gpu_memory = request.get("gpu_memory")
        # A million event dicts: without this the collector rescans them again and again
        # (a third of the reading time); what is left is frozen, so the replay workers
        # neither rescan nor copy it on write.
        gc.disable()
        try:
            loaded = read_snapshot(
                Path(str(request["path"])),
                name,
                int(request["max_bytes"]),
                int(gpu_memory) if gpu_memory else None,
            )
        finally:
            gc.freeze()
            gc.enable()
        read_s = round(time.perf_counter() - started, 2)
        out = analyse(
            loaded,
            name,
            Locale(request.get("locale", "en")),
            workers=int(request.get("workers") or default_workers()),
            progress=progress,
        )
        out.summary["timings"] = {
            "read_s": read_s,
            **out.summary["timings"],
            "total_s": round(time.perf_counter() - started, 2),
            **_resources(at_fork),
        }
    except Rejected as exc:
        detail = {"name": name, **exc.detail}
        _reject(result_fd, exc.reason, detail, host_cap, _resources(at_fork))
        return 0
    except MemoryError:  # the address-space cap: the file is too big to hold
        detail = {"name": name}
        _reject(result_fd, Rejection.TOO_BIG_IN_MEMORY, detail, host_cap, _resources(at_fork))
        return 0
    except Exception as exc:
        traceback.print_exc()  # to the log pipe: the server keeps its tail
        line = (str(exc).splitlines() or [""])[0][:500]
        write_line(
            result_fd,
            {
                "kind": "result",
                "state": DemoState.FAILED.value,
                "device": CLINIC_DEVICE,
                "error": f"{type(exc).__name__}: {line}",
            },
        )
        return 1
    write_line(
        result_fd,
        {
            "kind": "result",
            "state": DemoState.SUCCEEDED.value,
            "device": CLINIC_DEVICE,
            "title": out.title,
            "text": out.text,
            "table": out.table,
            "recommendation": out.recommendation,
            "png_b64": base64.b64encode(out.png).decode("ascii"),
            "summary": json_safe(out.summary),
        },
    )
    return 0


def _resources(at_fork: float) -> dict[str, float]:
    """CPU seconds of this child and of its replay workers, its peak memory, and the
    resident memory it started with (the fork server's pages)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak = _rss_mib("VmHWM") or own.ru_maxrss / 1024
    return {
        "cpu_s": round(own.ru_utime + own.ru_stime, 2),
        "workers_cpu_s": round(workers.ru_utime + workers.ru_stime, 2),
        "max_rss_mib": round(peak, 1),
        "rss_at_fork_mib": round(at_fork, 1),
    }


def _rss_mib(field: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (peak) of this process, in MiB; 0 without /proc."""
    try:
        with open("/proc/self/status") as f:
            line = next((x for x in f if x.startswith(f"{field}:")), "")
    except OSError:
        return 0.0
    parts = line.split()
    return int(parts[1]) / 1024 if len(parts) > 1 and parts[1].isdigit() else 0.0


def _reject(
    fd: int,
    reason: Rejection,
    detail: dict[str, Any],
    host_cap: int,
    resources: dict[str, float],
) -> None:
    if reason is Rejection.TOO_BIG_IN_MEMORY:
        detail.setdefault("limit", host_cap)
    write_line(
        fd,
        {
            "kind": "result",
            "state": DemoState.FAILED.value,
            "device": CLINIC_DEVICE,
            "error": f"snapshot refused: {reason.value}",
            "reason": reason.value,
            "detail": json_safe(detail),
            "resources": resources,  # for the operator's log and the benchmark
        },
    )
