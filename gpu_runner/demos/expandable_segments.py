"""Q4 — expandable_segments for changing sizes.

A "growing batch" workload (activations kept per layer, a 3× temporary freed at once;
batch size 8 → 16) under a 768 MiB cap, once with native segments and once with
``expandable_segments:True``. Native segments cannot merge across cudaMalloc boundaries,
so slivers pile up; expandable segments map pages into one virtual range instead.
"""

from __future__ import annotations

from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._alloc import AllocatorOOM, Device, open_device, stat
from gpu_runner.demos._context import DemoOutput, RunContext, mib, simulated_note, title_line
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20
NATIVE = "expandable_segments:False"
EXPANDABLE = "expandable_segments:True"
LAYERS = 16
SLACK = 4096  # sizes just above a 2 MiB multiple, as real activations are


def growing_batch(dev: Device, cap: int | None) -> dict[str, Any]:
    dev.cap(cap)
    ooms: list[list[int]] = []
    reserved: list[int] = []
    allocated: list[int] = []
    for n in range(8, 17):
        acts = []
        for layer in range(LAYERS):
            try:
                acts.append(dev.alloc(n * 2 * MiB + SLACK))
                dev.free(dev.alloc(3 * n * 2 * MiB + SLACK))
            except AllocatorOOM:
                # A training loop skips the batch that did not fit.
                ooms.append([n, layer + 1])
                break
            finally:
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
    }


def q3_layout(dev: Device) -> dict[str, Any]:
    """Q3's OOM scenario again: does the 300 MiB request fit now?"""
    dev.cap(1024 * MiB)
    big = dev.alloc(800 * MiB)
    dev.free(big)
    tensors = [dev.alloc(50 * MiB) for _ in range(16)]
    for h in tensors[::2]:
        dev.free(h)
    frees = stat(dev.stats(), "num_device_free")
    try:
        extra = dev.alloc(300 * MiB)
        ok = True
    except AllocatorOOM:
        extra, ok = None, False
    s = dev.stats()
    out = {
        "succeeded": ok,
        "reserved_bytes": dev.reserved(),
        "num_device_free": stat(s, "num_device_free") - frees,
        "num_alloc_retries": stat(s, "num_alloc_retries"),
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
    nat, exp = results["native"], results["expandable"]
    metrics: dict[str, Any] = {
        "cap_bytes": cap,
        **{
            mode: {
                "ooms": r["capped"]["ooms"],
                "oom_at": r["capped"]["oom_at"],
                "num_alloc_retries": r["capped"]["num_alloc_retries"],
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
    t = ctx.tr

    def where(r: dict[str, Any]) -> str:
        at = r["capped"]["oom_at"]
        return (
            t(f" (batch {at[0][0]}, layer {at[0][1]})", f" (batch {at[0][0]}, επίπεδο {at[0][1]})")
            if at
            else ""
        )

    lines = [
        title_line(
            ctx,
            "expandable_segments for changing sizes",
            "expandable_segments για μεταβλητά μεγέθη",
            dev.simulated,
        ),
        t(
            f"Growing batch (8 → 16), {LAYERS} layers, cap {mib(cap)}:",
            f"Batch που μεγαλώνει (8 → 16), {LAYERS} επίπεδα, όριο {mib(cap)}:",
        ),
        t(
            f"- native: {nat['capped']['ooms']} OOM{where(nat)}, "
            f"{nat['capped']['num_alloc_retries']} retries, peak reserved "
            f"`{mib(nat['capped']['peak_reserved_bytes'])}`",
            f"- native: {nat['capped']['ooms']} OOM{where(nat)}, "
            f"{nat['capped']['num_alloc_retries']} επαναλήψεις, μέγιστο reserved "
            f"`{mib(nat['capped']['peak_reserved_bytes'])}`",
        ),
        t(
            f"- expandable: {exp['capped']['ooms']} OOM, "
            f"{exp['capped']['num_alloc_retries']} retries, peak reserved "
            f"`{mib(exp['capped']['peak_reserved_bytes'])}` for peak allocated "
            f"`{mib(exp['capped']['peak_allocated_bytes'], 2)}`",
            f"- expandable: {exp['capped']['ooms']} OOM, "
            f"{exp['capped']['num_alloc_retries']} επαναλήψεις, μέγιστο reserved "
            f"`{mib(exp['capped']['peak_reserved_bytes'])}` για μέγιστο allocated "
            f"`{mib(exp['capped']['peak_allocated_bytes'], 2)}`",
        ),
        t(
            f"- without a cap: peak reserved native `{mib(nat['uncapped_peak_reserved_bytes'])}` "
            f"vs expandable `{mib(exp['uncapped_peak_reserved_bytes'])}`",
            f"- χωρίς όριο: μέγιστο reserved native "
            f"`{mib(nat['uncapped_peak_reserved_bytes'])}` έναντι expandable "
            f"`{mib(exp['uncapped_peak_reserved_bytes'])}`",
        ),
        t(
            f"- Q3's 300 MiB request: native {_ok(ctx, nat['q3_layout']['succeeded'])}, "
            f"expandable {_ok(ctx, exp['q3_layout']['succeeded'])} (free pages under the "
            f"holes unmapped and re-mapped: reserved `{mib(exp['q3_layout']['reserved_bytes'])}`)",
            f"- το αίτημα 300 MiB του Q3: native {_ok(ctx, nat['q3_layout']['succeeded'])}, "
            f"expandable {_ok(ctx, exp['q3_layout']['succeeded'])} (οι ελεύθερες σελίδες "
            f"κάτω από τα κενά αποχαρτογραφούνται και ξαναχαρτογραφούνται: reserved "
            f"`{mib(exp['q3_layout']['reserved_bytes'])}`)",
        ),
        t(
            f"- 8 × 16 MiB, then 4 × 32 MiB: reserved native "
            f"`{mib(nat['shrink_grow']['reserved_after'])}`, expandable "
            f"`{mib(exp['shrink_grow']['reserved_after'])}`",
            f"- 8 × 16 MiB, μετά 4 × 32 MiB: reserved native "
            f"`{mib(nat['shrink_grow']['reserved_after'])}`, expandable "
            f"`{mib(exp['shrink_grow']['reserved_after'])}`",
        ),
        t(
            "With expandable segments `segment.all.current` stays 0 and "
            "`inactive_split_bytes` excludes them: that is by design.",
            "Με expandable segments το `segment.all.current` μένει 0 και το "
            "`inactive_split_bytes` δεν τα μετρά: έτσι είναι σχεδιασμένο.",
        ),
    ]
    if dev.simulated:
        lines.append(simulated_note(ctx))

    fig, (ax,) = _plot.figure(8.0, 3.4)
    for mode, colour in (("native", _plot.FREE), ("expandable", _plot.ACCENT)):
        trace = results[mode]["capped"]["reserved_trace"]
        ax.plot([v / MiB for v in trace], color=colour, label=f"reserved · {mode}")
    alloc_trace = results["expandable"]["capped"]["allocated_trace"]
    ax.plot([v / MiB for v in alloc_trace], color=_plot.ALLOCATED, linewidth=0.8, label="allocated")
    ax.axhline(cap / MiB, color=_plot.MUTED, linestyle="--", linewidth=0.8, label="cap")
    ax.set_xlabel(t("layer step (batch 8 → 16)", "βήμα επιπέδου (batch 8 → 16)"))
    ax.set_ylabel("MiB")
    ax.set_title(
        t(
            "Reserved memory over time: native vs expandable segments",
            "Reserved μνήμη στον χρόνο: native έναντι expandable segments",
        ),
        fontsize=10,
    )
    ax.legend(fontsize=7, loc="upper left")
    return DemoOutput(
        "\n".join(lines), metrics, _plot.to_png(fig), dev.device_line(), dev.simulated
    )


def _ok(ctx: RunContext, ok: bool) -> str:
    return ctx.tr("succeeds", "πετυχαίνει") if ok else ctx.tr("OOM", "OOM")


DEMO = Demo(
    id="expandable-segments",
    title="expandable_segments for changing sizes",
    title_el="expandable_segments για μεταβλητά μεγέθη",
    kind=DemoKind.ALLOCATOR,
    run=run,
    params=(Param("cap_mib", int, 640, 4096, 768, "memory cap of the capped runs, MiB"),),
    alloc_conf=NATIVE,
)
