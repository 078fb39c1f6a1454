"""Q6 — gradient (activation) checkpointing: keep fewer activations, recompute in backward.

A stack of (Linear + GELU) layers, three ways: no checkpointing, `checkpoint()` per layer,
and `checkpoint_sequential()` with √layers segments (its last segment is never
checkpointed: the report says how much that keeps). The weight gradients are allocated
before the step, like the weights (as after a first step with `zero_grad(set_to_none=False)`),
and counted apart: the figures are activations only. Without CUDA the point is
device-independent: a `TorchDispatchMode` counts the bytes of every storage ops create and
subtracts them when the storage dies (``saved_tensors_hooks`` alone undercount: checkpoint
inputs live outside them).
"""

from __future__ import annotations

import importlib
import math
import statistics
import time
from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._context import DemoOutput, RunContext, RunKind
from gpu_runner.demos._live_bytes import live_bytes_tracker
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20
MODES = ("none", "per-layer", "sqrt")
CPU_REAL_LIMIT = 512 * MiB  # bigger configurations are always accounted on meta
SPEC_CONFIG = {"layers": 24, "width": 4096, "batch": 16384}  # bf16, the GPU-sized model


def build(torch: Any, layers: int, width: int, device: str, dtype: Any) -> Any:
    nn = torch.nn
    with torch.device(device):
        return nn.Sequential(
            *[nn.Sequential(nn.Linear(width, width, dtype=dtype), nn.GELU()) for _ in range(layers)]
        )


def forward(torch: Any, model: Any, x: Any, mode: str) -> Any:
    ckpt: Any = importlib.import_module("torch.utils.checkpoint")
    checkpoint, checkpoint_sequential = ckpt.checkpoint, ckpt.checkpoint_sequential
    if mode == "none":
        return model(x)
    if mode == "per-layer":
        h = x
        for layer in model:
            h = checkpoint(layer, h, use_reentrant=False)
        return h
    return checkpoint_sequential(model, sqrt_segments(len(model)), x, use_reentrant=False)


def sqrt_segments(layers: int) -> int:
    return max(1, round(math.sqrt(layers)))


def last_segment_layers(layers: int, segments: int) -> int:
    """Layers `checkpoint_sequential` runs without checkpointing: its last segment takes
    what the first `segments - 1` segments of `layers // segments` layers leave."""
    return layers - (layers // segments) * (segments - 1)


def preallocate_grads(torch: Any, model: Any) -> int:
    """Give every weight its gradient before the step (zeros, as `zero_grad(set_to_none=
    False)` leaves them): backward then accumulates in place, and the bytes it allocates are
    activations and their gradients only. Returns the gradients' bytes."""
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    return sum(int(p.grad.untyped_storage().nbytes()) for p in model.parameters())


def account(
    torch: Any, layers: int, width: int, batch: int, device: str, dtype: Any
) -> dict[str, dict[str, Any]]:
    """Live activation bytes after forward and at the peak of backward, per mode."""
    out: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        torch.manual_seed(0)
        model = build(torch, layers, width, device, dtype)
        x = torch.randn(batch, width, dtype=dtype, device=device, requires_grad=True)
        grads = preallocate_grads(torch, model)
        ignore = {id(p.untyped_storage()) for p in model.parameters()}
        ignore |= {id(p.grad.untyped_storage()) for p in model.parameters()}
        ignore.add(id(x.untyped_storage()))
        tracker = live_bytes_tracker(torch, ignore)
        start = time.perf_counter()
        with tracker:
            h = forward(torch, model, x, mode)
            after = tracker.live
            h.sum().backward()
        elapsed = time.perf_counter() - start
        out[mode] = {
            "after_forward_bytes": after,
            "peak_bytes": tracker.peak,
            "weight_grad_bytes": grads,
            "step_s": round(elapsed, 3) if device != "meta" else None,
        }
        del model, x, h
    return out


def measure_cuda(torch: Any, layers: int, width: int, batch: int) -> dict[str, dict[str, Any]]:
    """The real allocator: memory above the weights and input, and the step time."""
    out: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        torch.manual_seed(0)
        model = build(torch, layers, width, "cuda", torch.bfloat16)
        x = torch.randn(batch, width, dtype=torch.bfloat16, device="cuda", requires_grad=True)
        grads = preallocate_grads(torch, model)  # part of the baseline, like the weights
        times = []
        after = peak = 0
        for _ in range(3):
            model.zero_grad(set_to_none=False)
            x.grad = None
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            start = time.perf_counter()
            h = forward(torch, model, x, mode)
            after = torch.cuda.memory_allocated() - base
            h.sum().backward()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
            peak = torch.cuda.max_memory_allocated() - base
            del h
        out[mode] = {
            "after_forward_bytes": int(after),
            "peak_bytes": int(peak),
            "weight_grad_bytes": grads,
            "step_s": round(statistics.median(times), 4),
        }
        del model, x
        torch.cuda.empty_cache()
    return out


def run(ctx: RunContext) -> DemoOutput:
    torch = ctx.require_torch()
    layers, width, batch = ctx.int("layers"), ctx.int("width"), ctx.int("batch")
    predicted = 2 * layers * batch * width * 4
    if ctx.cuda:
        small = measure_cuda(torch, layers, width, batch)
        where = "cuda"
    elif ctx.int("cpu_tensors") and predicted <= CPU_REAL_LIMIT:
        small = account(torch, layers, width, batch, "cpu", torch.float32)
        where = "cpu"
    else:
        small = account(torch, layers, width, batch, "meta", torch.float32)
        where = "meta"
    big = account(
        torch,
        SPEC_CONFIG["layers"],
        SPEC_CONFIG["width"],
        SPEC_CONFIG["batch"],
        "meta",
        torch.bfloat16,
    )
    metrics = {
        "config": {
            "layers": layers,
            "width": width,
            "batch": batch,
            "dtype": "bfloat16" if ctx.cuda else "float32",
            "device": where,
            "sqrt_segments": sqrt_segments(layers),
        },
        "modes": small,
        "weight_grad_bytes": small["none"]["weight_grad_bytes"],
        "spec_config_meta": {
            "config": {**SPEC_CONFIG, "dtype": "bfloat16"},
            "modes": big,
            "weight_grad_bytes": big["none"]["weight_grad_bytes"],
        },
        "simulated": False,
    }
    label = (
        ctx.label(RunKind.GPU)
        if ctx.cuda
        else ctx.label(
            RunKind.CPU,
            cpu_note=ctx.t(
                "activation bytes counted from the storages torch created {where}; no GPU "
                "step times",
                where=ctx.t("on CPU tensors")
                if where == "cpu"
                else ctx.t("on the meta device (no RAM used)"),
            ),
        )
    )
    lines = _report(ctx, metrics, where)
    fig, (ax,) = _plot.figure(8.0, 3.6)
    modes = [small[m] for m in MODES]
    _plot.grouped_bars(
        ax,
        ["none", "per-layer", f"sqrt ({sqrt_segments(layers)})"],
        [
            _plot.mib_series(ctx.t("after forward"), modes, "after_forward_bytes", _plot.ALLOCATED),
            _plot.mib_series(ctx.t("peak in backward"), modes, "peak_bytes", _plot.FREE),
        ],
        ylabel=ctx.t("activations, weight grads apart (MiB)"),
        fmt=lambda v: ctx.num(v),
        title=ctx.t(
            "{layers} layers: checkpointing keeps {num} of {after_forward_bytes} after forward",
            layers=layers,
            num=ctx.num(small["per-layer"]["after_forward_bytes"] / MiB),
            after_forward_bytes=ctx.mib(small["none"]["after_forward_bytes"]),
        ),
    )
    _plot.number_ticks(ax, ctx.locale)
    return ctx.output(ctx.t("Gradient (activation) checkpointing"), lines, metrics, fig, label)


def _report(ctx: RunContext, m: dict[str, Any], where: str) -> list[str]:
    t = ctx.t
    c, small = m["config"], m["modes"]
    big, big_grads = m["spec_config_meta"]["modes"], m["spec_config_meta"]["weight_grad_bytes"]
    layers, width, batch = c["layers"], c["width"], c["batch"]

    def row(mode: str, r: dict[str, Any], fmt: Any) -> str:
        step = (
            ""
            if r["step_s"] is None
            else t(
                ", step {step_s} s",
                step_s=ctx.num(r["step_s"], 3),
            )
        )
        return (
            f"- {mode}: "
            + t("after forward ")
            + f"`{fmt(r['after_forward_bytes'])}`, "
            + t("peak in backward ")
            + f"`{fmt(r['peak_bytes'])}`{step}"
        )

    kind = {
        "cuda": t("measured on the GPU (bf16, above weights, weight grads and input)"),
        "cpu": t("live activation bytes on CPU tensors (fp32)"),
        "meta": t("live activation bytes on the meta device (fp32, no RAM)"),
    }[where]
    segments, big_segments = c["sqrt_segments"], sqrt_segments(SPEC_CONFIG["layers"])
    last = last_segment_layers(layers, segments)
    big_last = last_segment_layers(SPEC_CONFIG["layers"], big_segments)
    per_layer = small["none"]["after_forward_bytes"] / layers
    big_per_layer = big["none"]["after_forward_bytes"] / SPEC_CONFIG["layers"]
    return [
        t(
            "{layers} × (Linear({width}, {width}) + GELU), batch {batch}: {kind}. "
            "The weight gradients ({weight_grad_bytes}) exist before the step, like "
            "the weights, and are not counted:",
            layers=layers,
            width=width,
            batch=batch,
            kind=kind,
            weight_grad_bytes=ctx.mib(m["weight_grad_bytes"]),
        ),
        *[row(mode, small[mode], ctx.mib) for mode in MODES],
        t(
            "At GPU scale ({layers} × {width}, batch {batch}, bf16, meta accounting; "
            "weight grads {big_grads} apart):",
            layers=SPEC_CONFIG["layers"],
            width=SPEC_CONFIG["width"],
            batch=ctx.num(SPEC_CONFIG["batch"]),
            big_grads=ctx.gib(big_grads),
        ),
        *[row(mode, big[mode], ctx.gib) for mode in MODES],
        t(
            "sqrt is `checkpoint_sequential(model, {segments}, x)`, which never "
            "checkpoints its last segment (its output is needed at once in "
            "backward): the last {last} layers keep all their activations, {mib} of "
            "the {after_forward_bytes} after forward. At GPU scale round(√{layers}) "
            "= {big_segments} segments of {value} layers leave the last {big_last} "
            "unchecked: {gib} of {after_forward_bytes_2}.",
            segments=segments,
            last=last,
            mib=ctx.mib(last * per_layer),
            after_forward_bytes=ctx.mib(small["sqrt"]["after_forward_bytes"]),
            layers=SPEC_CONFIG["layers"],
            big_segments=big_segments,
            value=SPEC_CONFIG["layers"] // big_segments,
            big_last=big_last,
            gib=ctx.gib(big_last * big_per_layer),
            after_forward_bytes_2=ctx.gib(big["sqrt"]["after_forward_bytes"]),
        ),
        t(
            "Checkpointing keeps only segment inputs and recomputes the rest in "
            "backward, one segment just before its gradients, while the segments "
            "already done are freed: less activation memory for about one extra "
            "forward pass."
        ),
    ]


DEMO = Demo(
    id="activation-checkpointing",
    title="Gradient (activation) checkpointing",
    kind=DemoKind.TORCH,
    run=run,
    params=(
        Param("layers", int, 2, 32, 16, "Linear + GELU layers"),
        Param("width", int, 64, 4096, 1024, "features per layer"),
        Param("batch", int, 64, 16384, 1024, "rows of the input"),
        # The byte accounting is the same on meta tensors; real CPU tensors add step times
        # but take ~10 s on two cores for the default size.
        Param("cpu_tensors", int, 0, 1, 0, "without CUDA: 1 = real CPU tensors, 0 = meta"),
    ),
    timeout=120.0,
)
