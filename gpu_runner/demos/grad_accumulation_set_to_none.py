"""Gradient memory across accumulation steps: ``zero_grad(set_to_none=True)`` vs ``False``.

`Optimizer.zero_grad` sets gradients to ``None`` by default since torch 2.0: their memory
is freed between optimizer steps and the next backward allocates them again. With
``set_to_none=False`` they are zero-filled in place and stay allocated through the next
forward. Accumulating k micro-batches adds into the same `.grad` tensors: gradient memory
stays 1 × the parameters, whatever k is.

A small MLP, SGD without momentum (no optimizer state, so only gradients differ), both
settings. At each event (after a forward, a backward, the optimizer step, zero_grad) the
demo counts the bytes of the distinct storages behind `.grad`; on a GPU it also records
`memory_allocated()` above the weights and the peak of each optimizer step.
"""

from __future__ import annotations

from typing import Any

from bot import formats
from gpu_runner.demos import _plot
from gpu_runner.demos._context import DemoOutput, RunContext, RunKind
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20
SETTINGS = (True, False)


def grad_bytes(model: Any) -> int:
    storages = {
        p.grad.untyped_storage().data_ptr(): p.grad.untyped_storage().nbytes()
        for p in model.parameters()
        if p.grad is not None
    }
    return sum(storages.values())


def train(ctx: RunContext, set_to_none: bool, cfg: dict[str, int]) -> dict[str, Any]:
    torch = ctx.torch
    device = "cuda" if ctx.cuda else "cpu"
    torch.manual_seed(0)
    with torch.device(device):
        layers = []
        for _ in range(cfg["layers"]):
            layers += [torch.nn.Linear(cfg["width"], cfg["width"]), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers)
        batches = [torch.randn(cfg["batch"], cfg["width"]) for _ in range(cfg["accum_steps"])]
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    base = torch.cuda.memory_allocated() if ctx.cuda else 0
    events: list[dict[str, Any]] = []
    peaks: list[int] = []

    def note(label: str) -> None:
        event: dict[str, Any] = {"event": label, "grad_bytes": grad_bytes(model)}
        if ctx.cuda:
            event["allocated_bytes"] = int(torch.cuda.memory_allocated() - base)
        events.append(event)

    for step in range(1, cfg["steps"] + 1):
        if ctx.cuda:
            torch.cuda.reset_peak_memory_stats()
        for k, x in enumerate(batches, 1):
            loss = model(x).pow(2).mean() / cfg["accum_steps"]
            note(f"fwd {step}.{k}")
            loss.backward()
            del loss
            note(f"bwd {step}.{k}")
        opt.step()
        note(f"step {step}")
        opt.zero_grad(set_to_none=set_to_none)
        note(f"zero {step}")
        if ctx.cuda:
            peaks.append(int(torch.cuda.max_memory_allocated() - base))
    parameters = sum(p.numel() * p.element_size() for p in model.parameters())
    return {"events": events, "step_peak_bytes": peaks or None, "parameter_bytes": parameters}


def run(ctx: RunContext) -> DemoOutput:
    ctx.require_torch()
    cfg = {n: ctx.int(n) for n in ("layers", "width", "batch", "accum_steps", "steps")}
    runs = {str(s): train(ctx, s, cfg) for s in SETTINGS}
    params = runs["True"]["parameter_bytes"]
    metrics = {
        "config": cfg,
        "parameter_bytes": params,
        "set_to_none": runs,
        "simulated": False,
    }
    label = ctx.label(
        RunKind.GPU if ctx.cuda else RunKind.CPU,
        cpu_note=ctx.t(
            "gradient bytes counted from the storages behind .grad; "
            "memory_allocated() and step peaks n/a"
        ),
    )
    lines = report(ctx, cfg, runs, params)
    return ctx.output(
        ctx.t("Gradient accumulation and zero_grad(set_to_none)"),
        lines,
        metrics,
        plot(ctx, cfg, runs),
        label,
    )


def between_steps(run_: dict[str, Any]) -> int:
    """Gradient bytes alive during the second step's first forward (the first step starts
    with no gradients in both settings)."""
    events = run_["events"]
    second = [e for e in events if e["event"].startswith("fwd 2.")]
    return int((second or events)[0]["grad_bytes"])


def report(ctx: RunContext, cfg: dict[str, int], runs: dict[str, Any], params: int) -> list[str]:
    t = ctx.t
    during = ctx.size(max(e["grad_bytes"] for e in runs["True"]["events"]))
    k = cfg["accum_steps"]
    lines = [
        t(
            "{layers} × (Linear({width}, {width}) + ReLU), {params} of fp32 "
            "parameters, {k} micro-batches of {batch} per optimizer step, {steps} "
            "steps, SGD without momentum. Counted: bytes of the distinct storages "
            "behind `.grad` after each event.",
            layers=cfg["layers"],
            width=cfg["width"],
            params=ctx.size(params),
            k=k,
            batch=cfg["batch"],
            steps=cfg["steps"],
        ),
        t(
            "- while accumulating: *{during}* of gradients after 1 or {k} backward "
            "passes alike (the same tensors, added into)",
            during=during,
            k=k,
        ),
    ]
    for key in ("True", "False"):
        alive = ctx.size(between_steps(runs[key]))
        lines.append(
            t(
                "- `zero_grad(set_to_none={key})`: {alive} of gradients stay allocated "
                "through the next forward",
                key=key,
                alive=alive,
            )
        )
        peaks = runs[key]["step_peak_bytes"]
        if peaks:
            peak = ctx.size(peaks[-1])
            lines[-1] += t(
                "; peak of step 2: {peak} (`memory_allocated()` above the weights)",
                peak=peak,
            )
    lines.append(
        t(
            "`set_to_none=True` is the default since torch 2.0: between steps the "
            "memory goes back to the allocator and is available to the next "
            "forward's activations. Accumulation saves activation memory (smaller "
            "micro-batches), not gradient memory."
        )
    )
    return lines


def plot(ctx: RunContext, cfg: dict[str, int], runs: dict[str, Any]) -> Any:
    """Gradient bytes after every event for both settings (on a GPU also
    `memory_allocated()`), the zero_grad calls marked."""
    t = ctx.t
    gpu = ctx.cuda
    fig, axes = _plot.figure(9.0, 5.8 if gpu else 3.9, rows=2 if gpu else 1)
    labels = [e["event"] for e in runs["True"]["events"]]
    panels = [
        (
            "grad_bytes",
            t(".grad storage"),
        )
    ]
    if gpu:
        panels.append(("allocated_bytes", "memory_allocated()"))
    colours = {"True": _plot.ALLOCATED, "False": _plot.FREE}
    for ax, (key, what) in zip(axes, panels, strict=True):
        top = max(e[key] for r in runs.values() for e in r["events"])
        axis = formats.axis_unit(top)
        unit, scale = axis.name, axis.size
        # The state after event i spans [i - 0.5, i + 0.5], centred on its tick.
        edges = [i - 0.5 for i in range(len(labels) + 1)]
        held = [e[key] / scale for e in runs["False"]["events"]]
        ax.fill_between(
            edges,
            [*held, held[-1]],
            step="post",
            color=colours["False"],
            alpha=0.45,
            linewidth=0,
            label="set_to_none=False",
        )
        ys = [e[key] / scale for e in runs["True"]["events"]]
        ax.step(
            edges,
            [*ys, ys[-1]],
            where="post",
            linewidth=2,
            color=colours["True"],
            label="set_to_none=True",
        )
        for i in range(len(ys)):
            if held[i] - ys[i] > 0.5 * max(held) and (i == 0 or held[i - 1] - ys[i - 1] <= 0):
                ax.annotate(
                    t("freed"),
                    (i, (held[i] + ys[i]) / 2),
                    ha="center",
                    fontsize=7.5,
                    color=colours["True"],
                    bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none"},
                )
        ax.set_ylabel(f"{what} ({unit})")
        ax.set_ylim(0, max(top, 1) / scale * 1.3)
        _plot.number_ticks(ax, ctx.locale, digits=None)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=90, fontsize=7)
        ax.set_xlim(edges[0], edges[-1])
        for i, event in enumerate(labels):
            if event.startswith("zero"):
                ax.axvline(i, color=_plot.MUTED, linewidth=0.6, linestyle=":")
        ax.legend(frameon=False, loc="upper left", ncol=2)
    axes[-1].set_xlabel(
        t("after each forward, backward, optimizer step and zero_grad (step.micro-batch)")
    )
    freed = ctx.size(between_steps(runs["False"]) - between_steps(runs["True"]))
    axes[0].set_title(
        t(
            "set_to_none=True frees {freed} between steps; {accum_steps} "
            "micro-batches hold 1× the gradients",
            freed=freed,
            accum_steps=cfg["accum_steps"],
        ),
        loc="left",
    )
    return fig


DEMO = Demo(
    id="grad-accumulation-set-to-none",
    title="Gradient accumulation and zero_grad(set_to_none=True)",
    kind=DemoKind.TORCH,
    run=run,
    params=(
        Param("layers", int, 1, 16, 4, "Linear + ReLU layers"),
        Param("width", int, 64, 4096, 1024, "features per layer"),
        Param("batch", int, 1, 1024, 64, "rows per micro-batch"),
        Param("accum_steps", int, 1, 8, 4, "micro-batches per optimizer step"),
        Param("steps", int, 2, 4, 2, "optimizer steps"),
    ),
    timeout=120.0,
)
