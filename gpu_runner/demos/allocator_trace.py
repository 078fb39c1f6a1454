"""Replay a generated question's allocator trace, on the GPU when there is one.

The question's `inputs` (checked by `_trace_inputs.check_trace_inputs`) name a device
size, a `PYTORCH_CUDA_ALLOC_CONF`, an optional memory fraction and up to 64 mallocs,
frees and `empty_cache` calls. The trace always runs on the simulator (a fresh
`CachingAllocator`, exactly as the question's answer was computed). On CUDA it also runs
on the real allocator: in this demo's own fresh child, settings applied before the first
allocation, ``torch.empty(n, dtype=torch.uint8, device="cuda")`` per malloc, the cap set
so that ``int(fraction * total)`` is the simulator's byte cap. A malloc that runs out of
memory is recorded and the trace goes on; a later free of that name is skipped.
The result carries ``ask`` and its ``value`` so the bot can compare it with the answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bot import formats
from gpu_runner.demos import _plot
from gpu_runner.demos._alloc import CudaDevice
from gpu_runner.demos._context import DemoOutput, RunContext, RunKind
from gpu_runner.demos._registry import Demo, DemoKind, DemoRequestError, JsonParam
from gpu_runner.demos._trace_inputs import (
    DEFAULT_INPUTS,
    MAX_OPS,
    check_trace_inputs,
    effective_cap,
)
from gpu_runner.demos._trace_replay import SimTraceDevice, Step, exact_fraction, replay

LISTED_STEPS = 24  # longer traces list only the steps that changed reserved memory


def run_on_gpu(
    ctx: RunContext, inputs: Mapping[str, Any], sim_stats: dict[str, int]
) -> tuple[list[Step], dict[str, Any]]:
    """The trace on the real allocator, capped where the simulator was, and why the two
    may not be comparable (`cap`: the runner or the GPU allows less than the trace and
    the simulator needed more; `gc`: garbage collection acts only under a cap)."""
    from gpu_runner.sim import parse_conf

    torch = ctx.require_torch()
    total = int(torch.cuda.get_device_properties(0).total_memory)
    if inputs["total_memory"] > total:
        raise DemoRequestError(
            f"allocator-trace: inputs.total_memory={inputs['total_memory']} is more than this "
            f"GPU's {total} bytes; use at most {total}"
        )
    free_now = int(torch.cuda.mem_get_info()[0])
    dev = CudaDevice(ctx, str(inputs["conf"]))
    cap = effective_cap(inputs)
    wanted = int(inputs["total_memory"]) if cap is None else cap
    room = min(x for x in (wanted, ctx.gpu_cap, free_now) if x is not None)
    torch.cuda.set_per_process_memory_fraction(exact_fraction(room, total))
    steps, _ = replay(dev, inputs)
    untouched = sim_stats["num_ooms"] == 0 and sim_stats["num_alloc_retries"] == 0
    reasons = []
    if room < wanted and not (untouched and sim_stats["reserved_bytes.all.peak"] <= room):
        reasons.append("cap")
    if parse_conf(str(inputs["conf"])).garbage_collection_threshold > 0 and cap is None:
        reasons.append("gc")
    return steps, {"gpu_total_memory": total, "gpu_room_bytes": room, "not_comparable": reasons}


def describe(ctx: RunContext, i: int, step: Step, before: Step | None) -> str:
    """One line per step: what the allocator did, from its counters before and after."""
    op = step.op
    was = ctx.size(before.reserved if before else 0, exact=True)
    now = ctx.size(step.reserved, exact=True)
    grew = step.device_allocs > (before.device_allocs if before else 0)
    released = step.device_frees > (before.device_frees if before else 0)
    if op[0] == "malloc":
        head = f"`malloc {op[1]}` {ctx.size(op[2], exact=True)}"
        if step.outcome == "oom":
            what = ctx.t(
                "*out of memory*: the malloc raises (reserved {was} → {now})",
                was=was,
                now=now,
            )
        elif grew and released:
            what = ctx.t(
                "fits only after cached segments are released: reserved {was} → {now}",
                was=was,
                now=now,
            )
        elif grew:
            what = ctx.t(
                "new device memory: reserved {was} → {now}",
                was=was,
                now=now,
            )
        else:
            what = ctx.t(
                "served from the cache; reserved stays {now}",
                now=now,
            )
    elif op[0] == "free":
        head = f"`free {op[1]}`"
        what = (
            ctx.t("skipped: its malloc failed")
            if step.outcome == "skipped"
            else ctx.t(
                "back to the cache; reserved stays {now}",
                now=now,
            )
        )
    else:
        head = "`empty_cache()`"
        what = (
            ctx.t(
                "returns cached memory to the device: reserved {was} → {now}",
                was=was,
                now=now,
            )
            if released
            else ctx.t("releases nothing: no cached segment is entirely free")
        )
    return f"{i}. {head} → {what}"


def show(ctx: RunContext, key: str, value: int, exact: bool = True) -> str:
    """A statistic as its kind reads best: sizes in units (and bytes), counts as counts."""
    if "bytes" not in key:
        return ctx.num(value)
    human = ctx.size(value, exact=True)
    return f"{human} ({ctx.num(value)} B)" if exact and value >= 1024 else human


def run(ctx: RunContext) -> DemoOutput:
    inputs = ctx.json("inputs")
    ask = str(inputs["ask"])
    sim, sim_stats = replay(SimTraceDevice(inputs), inputs)
    steps, gpu = (sim, {}) if not ctx.cuda else run_on_gpu(ctx, inputs, sim_stats)
    simulated = not ctx.cuda
    label = ctx.label(RunKind.SIMULATED if simulated else RunKind.GPU)
    value = steps[-1].value
    cap = effective_cap(inputs)
    t = ctx.t
    conf = (
        f"`PYTORCH_CUDA_ALLOC_CONF={inputs['conf']}`"
        if inputs["conf"]
        else t("default allocator settings")
    )
    total = ctx.size(inputs["total_memory"], exact=True)
    capped = (
        t(
            "memory cap {cap}.",
            cap=ctx.size(cap, exact=True),
        )
        if cap is not None
        else t("no memory cap.")
    )
    lines = [
        t(
            "A {total} device, {conf}, {capped}",
            total=total,
            conf=conf,
            capped=capped,
        ),
    ]
    for i, step in enumerate(steps):
        before = steps[i - 1] if i else None
        changed = step.reserved != (before.reserved if before else 0) or step.outcome != "ok"
        if len(steps) <= LISTED_STEPS or changed:
            lines.append(describe(ctx, i + 1, step, before))
    lines.append(f"*`{ask}` = {show(ctx, ask, value)}*")
    metrics: dict[str, Any] = {
        "ask": ask,
        "value": value,
        "simulator_value": sim[-1].value,
        "gpu_value": None if simulated else value,
        "agree": None,
        "ooms": [i + 1 for i, s in enumerate(steps) if s.outcome == "oom"],
        "steps": step_figures(steps),
        "simulator_steps": None,
        "cap_bytes": cap,
        "total_memory": inputs["total_memory"],
        "simulated": simulated,
        **gpu,
    }
    if not simulated:
        metrics["agree"] = value == sim[-1].value
        metrics["simulator_steps"] = step_figures(sim)
        lines.append(verdict(ctx, ask, value, sim[-1].value, gpu["not_comparable"]))
    return ctx.output(
        ctx.t("Allocator trace · {steps} operations", steps=len(steps)),
        lines,
        metrics,
        plot(ctx, steps, ask, value, cap),
        label,
    )


def step_figures(steps: list[Step]) -> list[dict[str, Any]]:
    return [
        {"outcome": s.outcome, "allocated": s.allocated, "reserved": s.reserved, "value": s.value}
        for s in steps
    ]


def verdict(ctx: RunContext, ask: str, gpu: int, sim: int, reasons: list[str]) -> str:
    t = ctx.t
    same = gpu == sim
    line = t(
        "Real allocator {gpu} · simulator {sim}: {verdict}.",
        gpu=show(ctx, ask, gpu),
        sim=show(ctx, ask, sim),
        verdict=t("*they agree*") if same else t("*they differ*"),
    )
    if "cap" in reasons:
        line += " " + t(
            "The runner caps a demo below this trace's memory, so the GPU ran under "
            "a smaller cap and the figures need not match."
        )
    if "gc" in reasons:
        line += " " + t(
            "`garbage_collection_threshold` acts only under a memory cap, and the "
            "GPU run always has one (the runner's): not comparable."
        )
    return line


def step_label(ctx: RunContext, op: list[Any]) -> str:
    if op[0] == "malloc":
        return f"{op[1]} +{ctx.size(op[2])}"
    if op[0] == "free":
        return f"free {op[1]}"
    return "empty_cache"


def plot(ctx: RunContext, steps: list[Step], ask: str, value: int, cap: int | None) -> Any:
    """The segment map after every step, the cap and any failed request drawn; the title
    states the asked statistic's final value."""
    t = ctx.t
    top = max([s.reserved for s in steps] + [cap or 0])
    axis = formats.axis_unit(top)
    unit, scale = axis.name, axis.size
    fig, (ax,) = _plot.figure(max(7.0, min(13.0, 2.5 + 0.2 * len(steps))), 4.2)
    ooms = [i for i, s in enumerate(steps) if s.outcome == "oom"]
    _plot.segment_steps(
        ax,
        [s.segments for s in steps],
        [step_label(ctx, s.op) for s in steps],
        scale=scale,
        legend=(
            t("allocated"),
            t("free, cached"),
            t("request that failed (OOM)"),
        ),
        oom_steps=ooms,
        failed_requests=[int(steps[i].op[2]) for i in ooms],
        cap=cap,
        cap_label=t(
            "cap {size}",
            size=ctx.size(cap or 0, exact=True),
        ),
    )
    _plot.number_ticks(ax, ctx.locale, digits=None)
    ax.set_xlabel(t("step (operation of the trace)"))
    ax.set_ylabel(
        t(
            "reserved memory ({unit})",
            unit=unit,
        )
    )
    failed = f", {len(ooms)} OOM" if ooms else ""
    ax.set_title(
        t(
            "After {steps} steps{failed}: {ask} = {show}",
            steps=len(steps),
            failed=failed,
            ask=ask,
            show=show(ctx, ask, value, False),
        ),
        loc="left",
    )
    return fig


DEMO = Demo(
    id="allocator-trace",
    title="Replay an allocator trace",
    kind=DemoKind.ALLOCATOR,
    run=run,
    params=(
        JsonParam(
            "inputs",
            check_trace_inputs,
            json.dumps(DEFAULT_INPUTS),
            help=f"a generated question's allocator-trace inputs, at most {MAX_OPS} operations",
        ),
    ),
)
