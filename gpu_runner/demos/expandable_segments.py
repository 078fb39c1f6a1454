"""Q4 — expandable_segments for changing sizes.

A "growing batch" workload (activations kept per layer, a 3× temporary freed at once;
batch size 8 → 16) under a 768 MiB cap, once with native segments and once with
``expandable_segments:True``. Native segments cannot merge across cudaMalloc boundaries,
so slivers pile up; expandable segments map pages into one virtual range instead.
"""

from __future__ import annotations

from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._alloc import AllocatorOOM, Device, device_label, open_device, stat
from gpu_runner.demos._context import DemoOutput, RunContext
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20
PAGE = 20 * MiB  # a large-pool expandable page (large_segment_size)
NATIVE = "expandable_segments:False"
EXPANDABLE = "expandable_segments:True"
LAYERS = 16
SLACK = 4096  # sizes just above a 2 MiB multiple, as real activations are


def growing_batch(dev: Device, cap: int | None) -> dict[str, Any]:
    dev.cap(cap)
    ooms: list[list[int]] = []
    reserved: list[int] = []
    allocated: list[int] = []
    retry_steps: list[int] = []  # steps whose allocation flushed the cache and retried
    oom_steps: list[int] = []
    retries = 0
    for n in range(8, 17):
        acts = []
        for layer in range(LAYERS):
            try:
                acts.append(dev.alloc(n * 2 * MiB + SLACK))
                dev.free(dev.alloc(3 * n * 2 * MiB + SLACK))
            except AllocatorOOM:
                # A training loop skips the batch that did not fit.
                ooms.append([n, layer + 1])
                oom_steps.append(len(reserved))
                break
            finally:
                now = stat(dev.stats(), "num_alloc_retries")
                if now > retries:
                    retry_steps.append(len(reserved))
                retries = now
                reserved.append(dev.reserved())
                allocated.append(dev.allocated())
        for h in acts:
            dev.free(h)
    s = dev.stats()
    return {
        "ooms": len(ooms),
        "oom_at": ooms,  # [batch, layer (1-based)]
        "num_alloc_retries": stat(s, "num_alloc_retries"),
        "peak_reserved_bytes": stat(s, "reserved_bytes.all.peak"),
        "peak_allocated_bytes": stat(s, "allocated_bytes.all.peak"),
        "reserved_trace": reserved,
        "allocated_trace": allocated,
        "retry_steps": retry_steps,
        "oom_steps": oom_steps,
    }


def q3_layout(dev: Device) -> dict[str, Any]:
    """Q3's OOM scenario again: does the 300 MiB request fit now, and how?"""
    dev.cap(1024 * MiB)
    big = dev.alloc(800 * MiB)
    dev.free(big)
    tensors = [dev.alloc(50 * MiB) for _ in range(16)]
    for h in tensors[::2]:
        dev.free(h)
    before = dev.stats()
    try:
        extra = dev.alloc(300 * MiB)
        ok = True
    except AllocatorOOM:
        extra, ok = None, False
    s = dev.stats()
    out = {
        "succeeded": ok,
        "reserved_bytes": dev.reserved(),
        "num_device_free": stat(s, "num_device_free") - stat(before, "num_device_free"),
        "num_alloc_retries": stat(s, "num_alloc_retries"),
        # Bytes mapped (expandable) or cudaMalloc'd, and unmapped or cudaFree'd, by the request.
        "new_device_bytes": stat(s, "reserved_bytes.all.allocated")
        - stat(before, "reserved_bytes.all.allocated"),
        "released_bytes": stat(s, "reserved_bytes.all.freed")
        - stat(before, "reserved_bytes.all.freed"),
    }
    for h in [*tensors[1::2], *([extra] if extra is not None else [])]:
        dev.free(h)
    dev.cap(None)
    return out


def shrink_grow(dev: Device) -> dict[str, int]:
    """S11's example: 8 × 16 MiB, free, 4 × 32 MiB."""
    first = [dev.alloc(16 * MiB) for _ in range(8)]
    before = dev.reserved()
    for h in first:
        dev.free(h)
    second = [dev.alloc(32 * MiB) for _ in range(4)]
    after = dev.reserved()
    for h in second:
        dev.free(h)
    return {"reserved_before": before, "reserved_after": after}


def run(ctx: RunContext) -> DemoOutput:
    cap = ctx.int("cap_mib") * MiB
    dev = open_device(ctx, NATIVE)
    results: dict[str, dict[str, Any]] = {}
    for name, conf in (("native", NATIVE), ("expandable", EXPANDABLE)):
        dev.restart(conf)
        capped = growing_batch(dev, cap)
        dev.restart(conf)
        uncapped = growing_batch(dev, None)
        dev.restart(conf)
        q3 = q3_layout(dev)
        dev.restart(conf)
        s11 = shrink_grow(dev)
        results[name] = {
            "capped": capped,
            "uncapped_peak_reserved_bytes": uncapped["peak_reserved_bytes"],
            "q3_layout": q3,
            "shrink_grow": s11,
        }
    dev.restart(NATIVE)
    metrics: dict[str, Any] = {
        "cap_bytes": cap,
        **{
            mode: {
                "ooms": r["capped"]["ooms"],
                "oom_at": r["capped"]["oom_at"],
                "num_alloc_retries": r["capped"]["num_alloc_retries"],
                "retry_steps": r["capped"]["retry_steps"],
                "peak_reserved_bytes": r["capped"]["peak_reserved_bytes"],
                "peak_allocated_bytes": r["capped"]["peak_allocated_bytes"],
                "uncapped_peak_reserved_bytes": r["uncapped_peak_reserved_bytes"],
                "q3_layout": r["q3_layout"],
                "shrink_grow": r["shrink_grow"],
            }
            for mode, r in results.items()
        },
        "simulated": dev.simulated,
    }
    label = device_label(ctx, dev)
    lines = _report(ctx, metrics, cap)
    fig, (ax,) = _plot.figure(8.0, 3.6)
    _trace_plot(ctx, ax, results, cap)
    return ctx.output(ctx.t("expandable_segments for changing sizes"), lines, metrics, fig, label)


def _report(ctx: RunContext, m: dict[str, Any], cap: int) -> list[str]:
    t = ctx.t
    nat, exp = m["native"], m["expandable"]

    def where(r: dict[str, Any]) -> str:
        at = r["oom_at"]
        return (
            t(
                " (batch {at_0_0}, layer {at_0_1})",
                at_0_0=at[0][0],
                at_0_1=at[0][1],
            )
            if at
            else ""
        )

    q3 = exp["q3_layout"]
    pages = q3["new_device_bytes"] / PAGE
    return [
        t(
            "Growing batch (8 → 16), {layers} layers, cap {cap}:",
            layers=LAYERS,
            cap=ctx.mib(cap),
        ),
        t(
            "- native: {ooms} OOM{where}, {retries} retries ({flushes}), peak reserved `{peak}`",
            ooms=nat["ooms"],
            where=where(nat),
            retries=nat["num_alloc_retries"],
            flushes=t("each flushes the cache; the OOM follows the last one")
            if nat["ooms"]
            else t("each flushes the cache"),
            peak=ctx.mib(nat["peak_reserved_bytes"]),
        ),
        t(
            "- expandable: {ooms} OOM, {num_alloc_retries} retries, peak reserved "
            "`{peak_reserved_bytes}` for peak allocated `{peak_allocated_bytes}`",
            ooms=exp["ooms"],
            num_alloc_retries=exp["num_alloc_retries"],
            peak_reserved_bytes=ctx.mib(exp["peak_reserved_bytes"]),
            peak_allocated_bytes=ctx.mib(exp["peak_allocated_bytes"], 2),
        ),
        t(
            "- without a cap: peak reserved native `{uncapped_peak_reserved_bytes}` "
            "vs expandable `{uncapped_peak_reserved_bytes_2}`",
            uncapped_peak_reserved_bytes=ctx.mib(nat["uncapped_peak_reserved_bytes"]),
            uncapped_peak_reserved_bytes_2=ctx.mib(exp["uncapped_peak_reserved_bytes"]),
        ),
        t(
            "- a 300 MiB request on a fragmented 800 MiB segment (every other 50 MiB "
            "block free) under a 1 GiB cap: native {native}, expandable {expandable}: "
            "the retry unmapped {released} of free pages under the holes ({unmaps} "
            "unmap calls) and mapped {pages} new {page} pages at the end of the range: "
            "reserved `{reserved}`",
            native=_ok(ctx, nat["q3_layout"]["succeeded"]),
            expandable=_ok(ctx, q3["succeeded"]),
            released=ctx.mib(q3["released_bytes"]),
            unmaps=q3["num_device_free"],
            pages=ctx.num(pages, 0),
            page=ctx.mib(PAGE),
            reserved=ctx.mib(q3["reserved_bytes"]),
        ),
        t(
            "- 8 × 16 MiB, then 4 × 32 MiB: reserved native `{reserved_after}`, "
            "expandable `{reserved_after_2}`",
            reserved_after=ctx.mib(nat["shrink_grow"]["reserved_after"]),
            reserved_after_2=ctx.mib(exp["shrink_grow"]["reserved_after"]),
        ),
        t(
            "With expandable segments `segment.all.current` stays 0 and "
            "`inactive_split_bytes` excludes them: that is by design."
        ),
    ]


def _trace_plot(ctx: RunContext, ax: Any, results: dict[str, Any], cap: int) -> None:
    t = ctx.t
    native = results["native"]["capped"]
    expandable = results["expandable"]["capped"]
    for mode, run_, colour in (
        ("native", native, _plot.FREE),
        ("expandable", expandable, _plot.ACCENT),
    ):
        ax.plot(
            [v / MiB for v in run_["reserved_trace"]],
            color=colour,
            label=t(
                "reserved · {mode}",
                mode=mode,
            ),
        )
    ax.plot(
        [v / MiB for v in expandable["allocated_trace"]],
        color=_plot.ALLOCATED,
        linewidth=0.8,
        label=t("allocated · expandable"),
    )
    _plot.mark_level(
        ax,
        cap / MiB,
        t(
            "cap {cap}",
            cap=ctx.mib(cap),
        ),
        where=0.5,
    )
    trace = native["reserved_trace"]
    for step in native["retry_steps"]:
        if step in native["oom_steps"]:
            continue
        ax.axvline(step, color=_plot.MUTED, linestyle=":", linewidth=1.0)
        ax.annotate(
            t("retry: cache\nflushed"),
            (step, 0.80),
            xycoords=("data", "axes fraction"),
            xytext=(3, 0),
            textcoords="offset points",
            ha="left",
            va="top",
            fontsize=7.5,
            color="#555555",
        )
    for step in native["oom_steps"]:
        ax.plot([step], [trace[step] / MiB], marker="X", color=_plot.LIMIT, markersize=9)
        ax.annotate(
            "OOM",
            (step, trace[step] / MiB),
            xytext=(-8, 6),
            textcoords="offset points",
            ha="right",
            fontsize=8,
            color=_plot.LIMIT,
        )
    ax.set_xlabel(t("step (one per layer; batch 8 → 16)"))
    ax.set_ylabel(t("memory (MiB)"))
    ax.set_ylim(0, cap / MiB * 1.12)
    flushes = [s for s in native["retry_steps"] if s not in native["oom_steps"]]
    ax.set_title(
        t(
            "Native: {flushes} cache flushes and {ooms} OOM under the cap; "
            "expandable: {expandable_ooms} OOM, peak {peak}",
            flushes=len(flushes),  # the marked ones: the OOM's own retry is its marker
            ooms=native["ooms"],
            expandable_ooms=expandable["ooms"],
            peak=ctx.mib(expandable["peak_reserved_bytes"]),
        ),
        fontsize=9.5,
    )
    # Below the axes: inside, it would cover the curves near the cap.
    ax.legend(loc="upper center", ncol=3, bbox_to_anchor=(0.5, -0.2), frameon=False)


def _ok(ctx: RunContext, ok: bool) -> str:
    return ctx.t("succeeds") if ok else "OOM"


DEMO = Demo(
    id="expandable-segments",
    title="expandable_segments for changing sizes",
    kind=DemoKind.ALLOCATOR,
    run=run,
    params=(Param("cap_mib", int, 640, 4096, 768, "memory cap of the capped runs, MiB"),),
    alloc_conf=NATIVE,
)
