"""Loading a checkpoint: peak host memory of a plain `torch.load` vs ``mmap=True`` and
``load_state_dict(assign=True)`` into a model built on the meta device.

A plain load into a freshly built model holds two copies at once: the model's own
(randomly initialised) weights and the loaded state dict. Building the model on the
``meta`` device allocates nothing, and ``assign=True`` makes the loaded tensors the
parameters: one copy. With ``mmap=True`` the loaded tensors are views of the file's
pages: nothing is read until used, and what is read is file-backed page cache (the
kernel can drop it and share it between processes) rather than anonymous memory.

Each mode runs in a fresh process forked from this demo (no torch work happens in the
demo process itself), warmed up on a tiny checkpoint first so that library code paged
in on first use is not counted. Linux's ``/proc/self/status`` gives the peak resident
set (``VmHWM``, reset through ``/proc/self/clear_refs``) and what is resident at the end,
split into anonymous (``RssAnon``) and file-backed (``RssFile``) memory.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._context import DemoOutput, RunContext, RunKind
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20
WIDTH = 1024  # Linear(1024, 1024, bias=False): 4 MiB of fp32 weights per layer
MODES = ("plain", "mmap", "meta+assign", "meta+mmap+assign")
FIELDS = ("VmHWM", "VmRSS", "RssAnon", "RssFile")


def status() -> dict[str, int]:
    """The process's memory counters in bytes (empty where /proc is not there)."""
    out: dict[str, int] = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in FIELDS:
                    out[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return out


def reset_peak() -> bool:
    """Set VmHWM to the current resident size (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def in_fresh_process(work: Callable[[], dict[str, Any]], timeout: float = 120.0) -> dict[str, Any]:
    """Run `work` in a forked child and return its JSON-able result (or an error)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into the caller's stack
        os.close(read)
        try:
            answer = work()
        except BaseException as exc:  # reported to the parent, whatever it is
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        with os.fdopen(write, "w") as out:
            json.dump(answer, out)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as inp:
        data = inp.read()
    _, code = os.waitpid(pid, 0)
    if not data:
        return {"error": f"the measuring process ended with status {code} and no result"}
    result: dict[str, Any] = json.loads(data)
    return result


def build(torch: Any, layers: int, width: int, device: str) -> Any:
    with torch.device(device):
        return torch.nn.Sequential(
            *[torch.nn.Linear(width, width, bias=False) for _ in range(layers)]
        )


def load(torch: Any, mode: str, path: str, layers: int, width: int) -> Any:
    meta = mode.startswith("meta")
    model = build(torch, layers, width, "meta" if meta else "cpu")
    state = torch.load(path, mmap="mmap" in mode, weights_only=True)
    model.load_state_dict(state, assign=meta)
    return model


def measure_mode(torch: Any, mode: str, path: str, tiny: str, layers: int) -> dict[str, Any]:
    """In a fresh process: warm up on the tiny file, then load the real one."""
    load(torch, mode, tiny, 1, 64)(torch.ones(1, 64))  # page in the code paths used below
    peak_ok = reset_peak()
    start = status()
    began = time.perf_counter()
    model = load(torch, mode, path, layers, WIDTH)
    seconds = time.perf_counter() - began
    loaded = status()
    with torch.no_grad():
        model(torch.ones(1, WIDTH))  # touches every weight
    used = status()

    def delta(now: dict[str, int], key: str) -> int:
        return now.get(key, 0) - start.get(key, 0)

    return {
        "peak_bytes": loaded["VmHWM"] - start["VmRSS"] if peak_ok and loaded else None,
        "anon_bytes": delta(loaded, "RssAnon"),
        "file_bytes": delta(loaded, "RssFile"),
        "anon_after_forward_bytes": delta(used, "RssAnon"),
        "file_after_forward_bytes": delta(used, "RssFile"),
        "load_s": round(seconds, 3),
    }


def run(ctx: RunContext) -> DemoOutput:
    torch = ctx.require_torch()
    layers = max(1, ctx.int("size_mib") // 4)
    with tempfile.TemporaryDirectory(prefix="quizbot-load-") as tmp:
        path, tiny = os.path.join(tmp, "model.pt"), os.path.join(tmp, "tiny.pt")

        def save() -> dict[str, Any]:
            torch.manual_seed(0)
            torch.save(build(torch, layers, WIDTH, "cpu").state_dict(), path)
            torch.save(build(torch, 1, 64, "cpu").state_dict(), tiny)
            return {"file_bytes": os.path.getsize(path)}

        saved = in_fresh_process(save)
        if "error" in saved:
            raise RuntimeError(f"could not write the checkpoint: {saved['error']}")
        modes = {
            mode: in_fresh_process(partial(measure_mode, torch, mode, path, tiny, layers))
            for mode in MODES
        }
    weights = layers * WIDTH * WIDTH * 4
    metrics = {
        "config": {"layers": layers, "width": WIDTH, "dtype": "float32"},
        "weights_bytes": weights,
        "file_bytes": saved["file_bytes"],
        "modes": modes,
        "measured_with": "/proc/self/status (VmHWM, RssAnon, RssFile), a fresh process per mode",
        "simulated": False,
    }
    # Host memory on every host: a GPU, if there is one, takes no part.
    label = ctx.label(
        RunKind.CPU,
        cpu_note=ctx.t("host memory from /proc/self/status, a fresh process per mode"),
    )
    lines = report(ctx, weights, modes)
    return ctx.output(
        ctx.t("Loading a checkpoint: peak host memory"),
        lines,
        metrics,
        plot(ctx, weights, modes),
        label,
    )


def ratio(ctx: RunContext, value: int | None, weights: int) -> str:
    if value is None:
        return "n/a"
    if value < 0.05 * weights:
        return f"<{ctx.num(0.1, 1)}×"
    return f"{ctx.num(value / weights, 1)}×"


def report(ctx: RunContext, weights: int, modes: dict[str, dict[str, Any]]) -> list[str]:
    t = ctx.t
    code = {
        "plain": "`model = Net(); model.load_state_dict(torch.load(f))`",
        "mmap": "`model = Net(); model.load_state_dict(torch.load(f, mmap=True))`",
        "meta+assign": "`with torch.device('meta'): Net()` + `load_state_dict(…, assign=True)`",
        "meta+mmap+assign": "meta + `torch.load(f, mmap=True)` + `assign=True`",
    }
    lines = [
        t(
            "A {weights} fp32 state dict, four ways, each in a fresh process; peak "
            "resident memory above the start (`VmHWM`), then what stays resident: "
            "anonymous (RAM or swap) / file-backed (page cache, droppable).",
            weights=ctx.size(weights),
        ),
    ]
    for mode in MODES:
        r = modes[mode]
        if "error" in r:
            lines.append(f"- {mode}: {r['error']}")
            continue
        peak = "n/a" if r["peak_bytes"] is None else ctx.size(r["peak_bytes"])
        anon, file = ctx.size(r["anon_bytes"]), ctx.size(r["file_bytes"])
        used = (
            f"{ctx.size(r['anon_after_forward_bytes'])} / "
            f"{ctx.size(r['file_after_forward_bytes'])} · {ctx.num(r['load_s'], 2)} s"
        )
        lines.append(
            f"- *{mode}* {code[mode]}: "
            + t("peak ")
            + f"*{peak}* ({ratio(ctx, r['peak_bytes'], weights)}) · {anon} / {file}"
            + t(
                " · after a forward {used}",
                used=used,
            )
        )
    lines.append(
        t(
            "A plain load into a built model holds two copies (random init + "
            "loaded). `mmap=True` alone does not help then: copying into the model "
            "reads every page (file-backed while the load runs). Meta + "
            "`assign=True` keeps one copy; with `mmap=True` too, pages are read only "
            "when used, and they are file-backed. Since torch 2.6 `torch.load` "
            "defaults to `weights_only=True`."
        )
    )
    return lines


def plot(ctx: RunContext, weights: int, modes: dict[str, dict[str, Any]]) -> Any:
    """Per mode: what stays resident after the load (left bar) and after a forward (right,
    hatched), anonymous vs file-backed, the peak of the load drawn over them."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    t = ctx.t
    fig, (ax,) = _plot.figure(8.0, 4.0)
    ok = [m for m in MODES if "error" not in modes[m]]
    xs = range(len(ok))
    tops: list[float] = [weights / MiB]
    for shift, suffix, hatch in ((-0.2, "", None), (0.2, "_after_forward", "///")):
        anon = [max(modes[m][f"anon{suffix}_bytes"], 0) / MiB for m in ok]
        file = [max(modes[m][f"file{suffix}_bytes"], 0) / MiB for m in ok]
        at = [x + shift for x in xs]
        ax.bar(at, anon, width=0.36, color=_plot.ALLOCATED, hatch=hatch, edgecolor="white")
        ax.bar(at, file, width=0.36, bottom=anon, color=_plot.FREE, hatch=hatch, edgecolor="white")
        tops += [a + f for a, f in zip(anon, file, strict=True)]
    peaks = [modes[m]["peak_bytes"] for m in ok]
    for x, p in zip(xs, peaks, strict=True):
        if p is None:
            continue
        ax.plot([x - 0.4, x + 0.0], [p / MiB] * 2, color="black", linewidth=2.2)
        ax.annotate(
            ratio(ctx, p, weights),
            (x - 0.2, p / MiB),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            fontsize=8,
        )
        tops.append(p / MiB)
    # Labelled at the left, above the plain bars (which reach it), clear of the last mode's.
    _plot.mark_level(
        ax,
        weights / MiB,
        t("1 × the weights"),
        colour=_plot.MUTED,
        where=0.14,
    )
    ax.legend(
        handles=[
            Line2D(
                [],
                [],
                color="black",
                linewidth=2.2,
                label=t("peak during the load (VmHWM)"),
            ),
            Patch(
                color=_plot.ALLOCATED,
                label=t("anonymous"),
            ),
            Patch(
                color=_plot.FREE,
                label=t("file-backed (page cache)"),
            ),
            Patch(
                facecolor="white",
                edgecolor=_plot.MUTED,
                hatch="///",
                label=t("right bar: after a forward"),
            ),
        ],
        frameon=False,
        loc="upper right",
    )
    ax.set_xticks(list(xs))
    ax.set_xticklabels(ok)
    ax.set_xlabel(t("how the checkpoint is loaded"))
    ax.set_ylabel(t("resident above the start (MiB)"))
    _plot.number_ticks(ax, ctx.locale, digits=None)
    ax.set_ylim(0, max(tops) * 1.45)
    best = min(ok, key=lambda m: modes[m]["peak_bytes"] or 0)
    plain = modes["plain"].get("peak_bytes")
    best_peak = ratio(ctx, modes[best]["peak_bytes"], weights)
    ax.set_title(
        t(
            "Loading {weights}: plain peaks at {ratio} the weights, {best} at {best_peak}",
            weights=ctx.size(weights),
            ratio=ratio(ctx, plain, weights),
            best=best,
            best_peak=best_peak,
        ),
        loc="left",
    )
    return fig


DEMO = Demo(
    id="model-loading-mmap",
    title="Loading a checkpoint: torch.load mmap=True and load_state_dict(assign=True)",
    kind=DemoKind.TORCH,
    run=run,
    params=(Param("size_mib", int, 16, 2048, 256, "checkpoint size in MiB (fp32 weights)"),),
    timeout=180.0,
)
