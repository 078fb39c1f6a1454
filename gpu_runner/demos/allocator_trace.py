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
from gpu_runner.demos._units import unit_for

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
            what = ctx.tr(
                f"*out of memory*: the malloc raises (reserved {was} → {now})",
                f"*εξάντληση μνήμης (OOM)*: το malloc αποτυγχάνει (δεσμευμένη {was} → {now})",
            )
        elif grew and released:
            what = ctx.tr(
                f"fits only after cached segments are released: reserved {was} → {now}",
                f"χωράει μόνο αφού αποδεσμευτούν τμήματα της cache: δεσμευμένη {was} → {now}",
            )
        elif grew:
            what = ctx.tr(
                f"new device memory: reserved {was} → {now}",
                f"νέα μνήμη από τη συσκευή: δεσμευμένη {was} → {now}",
            )
        else:
            what = ctx.tr(
                f"served from the cache; reserved stays {now}",
                f"εξυπηρετείται από την cache· η δεσμευμένη μένει {now}",
            )
    elif op[0] == "free":
        head = f"`free {op[1]}`"
        what = (
            ctx.tr("skipped: its malloc failed", "παραλείπεται: το malloc του απέτυχε")
            if step.outcome == "skipped"
            else ctx.tr(
                f"back to the cache; reserved stays {now}",
                f"επιστρέφει στην cache· η δεσμευμένη μένει {now}",
            )
        )
    else:
        head = "`empty_cache()`"
        what = (
            ctx.tr(
                f"returns cached memory to the device: reserved {was} → {now}",
                f"επιστρέφει μνήμη της cache στη συσκευή: δεσμευμένη {was} → {now}",
            )
            if released
            else ctx.tr(
                "releases nothing: no cached segment is entirely free",
                "δεν αποδεσμεύει τίποτα: κανένα τμήμα της cache δεν είναι ολόκληρο ελεύθερο",
            )
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
    t = ctx.tr
    conf = (
        f"`PYTORCH_CUDA_ALLOC_CONF={inputs['conf']}`"
        if inputs["conf"]
        else t("default allocator settings", "ρυθμίσεις του allocator από προεπιλογή")
    )
    total = ctx.size(inputs["total_memory"], exact=True)
    capped = (
        t(f"memory cap {ctx.size(cap, exact=True)}.", f"όριο μνήμης {ctx.size(cap, exact=True)}.")
        if cap is not None
        else t("no memory cap.", "χωρίς όριο μνήμης.")
    )
    lines = [
        ctx.title(
            f"Allocator trace · {len(steps)} operations",
            f"Ίχνος του allocator · {len(steps)} λειτουργίες",
            label,
        ),
        t(f"A {total} device, {conf}, {capped}", f"Συσκευή {total}, {conf}, {capped}"),
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
    return ctx.output(lines, metrics, plot(ctx, steps, ask, value, cap), label)


def step_figures(steps: list[Step]) -> list[dict[str, Any]]:
    return [
        {"outcome": s.outcome, "allocated": s.allocated, "reserved": s.reserved, "value": s.value}
        for s in steps
    ]


def verdict(ctx: RunContext, ask: str, gpu: int, sim: int, reasons: list[str]) -> str:
    t = ctx.tr
    same = gpu == sim
    line = t(
        f"Real allocator {show(ctx, ask, gpu)} · simulator {show(ctx, ask, sim)}: "
        + ("*they agree*." if same else "*they differ*."),
        f"Πραγματικός allocator {show(ctx, ask, gpu)} · προσομοιωτής {show(ctx, ask, sim)}: "
        + ("*συμφωνούν*." if same else "*διαφέρουν*."),
    )
    if "cap" in reasons:
        line += " " + t(
            "The runner caps a demo below this trace's memory, so the GPU ran under a "
            "smaller cap and the figures need not match.",
            "Ο runner περιορίζει κάθε demo κάτω από τη μνήμη αυτού του ίχνους, οπότε η GPU "
            "έτρεξε με μικρότερο όριο και τα νούμερα μπορεί να διαφέρουν.",
        )
    if "gc" in reasons:
        line += " " + t(
            "`garbage_collection_threshold` acts only under a memory cap, and the GPU run "
            "always has one (the runner's): not comparable.",
            "Το `garbage_collection_threshold` ενεργεί μόνο με όριο μνήμης, και η εκτέλεση "
            "στη GPU έχει πάντα ένα (του runner): δεν συγκρίνονται.",
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
    t = ctx.tr
    top = max([s.reserved for s in steps] + [cap or 0])
    unit, scale = unit_for(top)
    fig, (ax,) = _plot.figure(max(7.0, min(13.0, 2.5 + 0.2 * len(steps))), 4.2)
    ooms = [i for i, s in enumerate(steps) if s.outcome == "oom"]
    _plot.segment_steps(
        ax,
        [s.segments for s in steps],
        [step_label(ctx, s.op) for s in steps],
        scale=scale,
        legend=(
            t("allocated", "κατανεμημένη (allocated)"),
            t("free, cached", "ελεύθερη, στην cache"),
            t("request that failed (OOM)", "αίτημα που απέτυχε (OOM)"),
        ),
        oom_steps=ooms,
        failed_requests=[int(steps[i].op[2]) for i in ooms],
        cap=cap,
        cap_label=t(
            f"cap {ctx.size(cap or 0, exact=True)}", f"όριο {ctx.size(cap or 0, exact=True)}"
        ),
    )
    _plot.number_ticks(ax, ctx.locale, digits=None)
    ax.set_xlabel(t("step (operation of the trace)", "βήμα (λειτουργία του ίχνους)"))
    ax.set_ylabel(t(f"reserved memory ({unit})", f"δεσμευμένη (reserved) μνήμη ({unit})"))
    failed = f", {len(ooms)} OOM" if ooms else ""
    ax.set_title(
        t(
            f"After {len(steps)} steps{failed}: {ask} = {show(ctx, ask, value, False)}",
            f"Μετά από {len(steps)} βήματα{failed}: {ask} = {show(ctx, ask, value, False)}",
        ),
        loc="left",
    )
    return fig


DEMO = Demo(
    id="allocator-trace",
    title="Replay an allocator trace",
    title_el="Αναπαραγωγή ίχνους του allocator",
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
