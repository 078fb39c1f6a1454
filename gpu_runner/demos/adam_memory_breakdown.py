"""Adam in mixed precision: what each parameter costs (weights, grads, fp32 master, m, v).

The headline is ZeRO's accounting: bf16 weights (2 B) + bf16 grads (2 B) + fp32 master
weights (4 B) + Adam's two fp32 moments (8 B) = 16 B per parameter — the same 16 B as plain
fp32 training. A step that hands the optimizer fp32 gradients (`master.grad =
grad.float()`, as loops with an fp32 master usually do) keeps 4 B more: 20 B. With torch,
one such step of a small model is measured stage by stage: `memory_allocated()` deltas on
a GPU, a tracker of the storages torch creates on the CPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._context import DemoOutput, RunContext
from gpu_runner.demos._live_bytes import live_bytes_tracker
from gpu_runner.demos._registry import Demo, DemoKind, Param

PARTS = ("weights", "grads", "master", "master_grads", "adam_m", "adam_v")
ZERO = "mixed (ZeRO: 16 B)"
WITH_FP32_GRADS = "mixed + fp32 grads"
SCHEMES: dict[str, dict[str, int]] = {
    "fp32": {"weights": 4, "grads": 4, "master": 0, "master_grads": 0, "adam_m": 4, "adam_v": 4},
    ZERO: {"weights": 2, "grads": 2, "master": 4, "master_grads": 0, "adam_m": 4, "adam_v": 4},
    WITH_FP32_GRADS: {
        "weights": 2,
        "grads": 2,
        "master": 4,
        "master_grads": 4,
        "adam_m": 4,
        "adam_v": 4,
    },
    "bf16, no master": {
        "weights": 2,
        "grads": 2,
        "master": 0,
        "master_grads": 0,
        "adam_m": 4,
        "adam_v": 4,
    },
}
GPUS = {"H100 80GB": 80 * 10**9, "H200 141GB": 141 * 10**9}
ALLOCATED = "allocated_bytes.all.current"
# What each stage of the measured step adds, in order (the moments: m, v and Adam's step).
STAGES = ("master", "weights", "grads", "master_grads", "adam_state")


def breakdown(stats: Sequence[Mapping[str, int]], parameters: int) -> dict[str, Any]:
    """Bytes of each stage from `memory_stats()` read before the step and after each stage."""
    if len(stats) != len(STAGES) + 1:
        raise ValueError(f"need {len(STAGES) + 1} readings, got {len(stats)}")
    readings = [int(s[ALLOCATED]) for s in stats]
    parts = {
        f"{name}_bytes": after - before
        for name, before, after in zip(STAGES, readings[:-1], readings[1:], strict=True)
    }
    total = readings[-1] - readings[0]
    return {
        "parameters": parameters,
        **parts,
        "total_bytes": total,
        "bytes_per_parameter": round(total / parameters, 3),
    }


def measure(torch: Any, cuda: bool) -> dict[str, Any]:
    """One mixed-precision AdamW step on a small model, measured stage by stage."""
    device = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    x = torch.randn(64, 512, device=device).to(torch.bfloat16)
    if cuda:
        # cuBLAS allocates its workspace on the first matmul: before the baseline.
        (x @ x.T).sum().item()
        torch.cuda.synchronize()
    tracker: Any = None if cuda else live_bytes_tracker(torch, {id(x.untyped_storage())})

    def reading() -> dict[str, int]:
        if cuda:
            torch.cuda.synchronize()
            return {ALLOCATED: int(torch.cuda.memory_allocated())}
        return {ALLOCATED: int(tracker.live)}

    stats = [reading()]
    if tracker is not None:
        tracker.__enter__()
    try:
        with torch.device(device):
            master = torch.nn.Sequential(
                torch.nn.Linear(512, 512), torch.nn.GELU(), torch.nn.Linear(512, 512)
            )
        stats.append(reading())
        work = [p.detach().to(torch.bfloat16).requires_grad_() for p in master.parameters()]
        stats.append(reading())
        w0, b0, w1, b1 = work
        h = torch.nn.functional.gelu(x @ w0.T + b0) @ w1.T + b1
        h.float().pow(2).mean().backward()
        del h  # the activations go; the bf16 grads stay
        stats.append(reading())
        for m, w in zip(master.parameters(), work, strict=True):
            m.grad = w.grad.float()  # the fp32 gradient the optimizer step reads
        stats.append(reading())
        opt = torch.optim.AdamW(master.parameters(), lr=1e-3)
        opt.step()  # creates m and v (and a step counter) per parameter tensor
        stats.append(reading())
    finally:
        if tracker is not None:
            tracker.__exit__(None, None, None)
    parameters = sum(p.numel() for p in work)
    del opt  # kept alive until the last reading: its state is what is measured
    how = "memory_allocated() deltas" if cuda else "live storages (dispatch-mode tracker)"
    return {**breakdown(stats, parameters), "device": device, "method": how}


def run(ctx: RunContext) -> DemoOutput:
    n = ctx.int("params_m") * 10**6
    per_param = {k: sum(v.values()) for k, v in SCHEMES.items()}
    totals = {k: b * n for k, b in per_param.items()}
    check = measure(ctx.torch, ctx.cuda) if ctx.torch is not None else None
    metrics: dict[str, Any] = {
        "parameters": n,
        "headline": ZERO,
        "bytes_per_parameter": per_param,
        "breakdown": SCHEMES,
        "total_bytes": totals,
        "fits": {gpu: {k: v <= cap for k, v in totals.items()} for gpu, cap in GPUS.items()},
        "measured": check,
        "simulated": False,
    }
    label = ctx.torch_label(
        check is not None,
        cpu_note=ctx.t(
            "the step ran on the CPU; bytes counted from the storages torch created "
            "(no caching allocator there)"
        ),
    )
    lines = _report(ctx, metrics, check)
    fig, (ax,) = _plot.figure(8.0, 3.6)
    _stacked_plot(ctx, ax, check)
    return ctx.output(
        ctx.t("Adam memory per parameter (mixed precision)"), lines, metrics, fig, label
    )


def _report(ctx: RunContext, m: dict[str, Any], check: dict[str, Any] | None) -> list[str]:
    t = ctx.t
    per, parameters = m["bytes_per_parameter"], m["parameters"]
    z = SCHEMES[ZERO]
    fits = m["fits"]
    lines = [
        t(
            "ZeRO's accounting, per parameter: weights {weights} B (bf16) + grads "
            "{grads} B (bf16) + fp32 master {master} B + Adam m {adam_m} B + v "
            "{adam_v} B = *{per} B*; plain fp32 is also {fp32} B, bf16 without a "
            "master copy {bf16_no_master} B.",
            weights=z["weights"],
            grads=z["grads"],
            master=z["master"],
            adam_m=z["adam_m"],
            adam_v=z["adam_v"],
            per=per[ZERO],
            fp32=per["fp32"],
            bf16_no_master=per["bf16, no master"],
        ),
        t(
            "A step that hands the optimizer fp32 grads (`master.grad = "
            "grad.float()`) keeps {master_grads} B more while it runs: *{per} B*.",
            master_grads=SCHEMES[WITH_FP32_GRADS]["master_grads"],
            per=per[WITH_FP32_GRADS],
        ),
        t(
            "For {billions} billion parameters: {zero} ({with_fp32_grads} with fp32 grads) "
            "before any activation — {fits}.",
            billions=ctx.num(parameters / 1e9, 1),
            zero=ctx.gib(m["total_bytes"][ZERO], 1),
            with_fp32_grads=ctx.gib(m["total_bytes"][WITH_FP32_GRADS], 1),
            fits=", ".join(_fits(ctx, gpu, fits[gpu][ZERO]) for gpu in GPUS),
        ),
    ]
    if check is not None:
        lines.append(
            t(
                "Measured on {device} ({method}), one AdamW step of {parameters} "
                "parameters: fp32 master {master_bytes}, bf16 weights {weights_bytes}, "
                "bf16 grads {grads_bytes}, fp32 grads {master_grads_bytes}, Adam state "
                "{adam_state_bytes} → *{bytes_per_parameter} B/parameter*.",
                device=check["device"],
                method=check["method"],
                parameters=ctx.num(check["parameters"]),
                master_bytes=ctx.size(check["master_bytes"]),
                weights_bytes=ctx.size(check["weights_bytes"]),
                grads_bytes=ctx.size(check["grads_bytes"]),
                master_grads_bytes=ctx.size(check["master_grads_bytes"]),
                adam_state_bytes=ctx.size(check["adam_state_bytes"]),
                bytes_per_parameter=ctx.num(check["bytes_per_parameter"], 2),
            )
        )
    lines.append(t("ZeRO/FSDP shard these bytes across GPUs; 8-bit optimizers shrink m and v."))
    return lines


def _stacked_plot(ctx: RunContext, ax: Any, check: dict[str, Any] | None) -> None:
    t = ctx.t
    colours = {
        "weights": _plot.ALLOCATED,
        "grads": "#8172B3",
        "master": _plot.MUTED,
        "master_grads": "#CCB974",
        "adam_m": _plot.FREE,
        "adam_v": _plot.LIMIT,
    }
    names = {
        "weights": t("weights"),
        "grads": t("grads"),
        "master": "fp32 master",
        "master_grads": t("fp32 grads"),
        "adam_m": "Adam m",
        "adam_v": "Adam v",
    }
    columns = dict(SCHEMES)
    if check is not None:
        p = check["parameters"]
        # m and v are equal halves of the measured Adam state (its step counters are bytes).
        half = check["adam_state_bytes"] / 2 / p
        columns[t("measured")] = {
            "weights": check["weights_bytes"] / p,
            "grads": check["grads_bytes"] / p,
            "master": check["master_bytes"] / p,
            "master_grads": check["master_grads_bytes"] / p,
            "adam_m": half,
            "adam_v": half,
        }
    shown = {
        ZERO: t("mixed\n(ZeRO: 16 B)"),
        WITH_FP32_GRADS: t("mixed\n+ fp32 grads"),
        "bf16, no master": t("bf16,\nno master"),
    }
    labels = [shown.get(k, k) for k in columns]
    bottom = [0.0] * len(labels)
    for part in PARTS:
        values = [float(c[part]) for c in columns.values()]
        ax.bar(labels, values, bottom=bottom, color=colours[part], label=names[part])
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    for i, total in enumerate(bottom):
        digits = 0 if round(total, 2).is_integer() else 2
        _plot.bar_total(ax, i, total, f"{ctx.num(total, digits)} B")
    ax.set_ylabel(t("bytes per parameter"))
    ax.margins(y=0.12)
    ax.set_title(
        t("Mixed precision saves no optimizer memory: 16 B/parameter, 20 B with fp32 grads"),
    )
    ax.legend(ncol=6, loc="upper center", bbox_to_anchor=(0.5, -0.22), frameon=False)


def _fits(ctx: RunContext, gpu: str, fits: bool) -> str:
    return ctx.t("{gpu}: fits", gpu=gpu) if fits else ctx.t("{gpu}: does not fit", gpu=gpu)


DEMO = Demo(
    id="adam-memory-breakdown",
    title="Adam memory per parameter in mixed precision",
    kind=DemoKind.MIXED,
    run=run,
    params=(Param("params_m", int, 1, 1_000_000, 7000, "model size, millions of parameters"),),
)
