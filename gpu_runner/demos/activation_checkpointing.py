"""Q6 — gradient (activation) checkpointing: keep fewer activations, recompute in backward.

A stack of (Linear + GELU) layers, three ways: no checkpointing, `checkpoint()` per layer,
and `checkpoint_sequential()` with √layers segments (its last segment is never
checkpointed). Without CUDA the point is device-independent: a `TorchDispatchMode` counts
the bytes of every storage ops create and subtracts them when the storage dies
(``saved_tensors_hooks`` alone undercount: checkpoint inputs live outside them).
"""

from __future__ import annotations

import importlib
import math
import statistics
import time
import weakref
from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._context import DemoOutput, RunContext, gib, mib, title_line
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20
MODES = ("none", "per-layer", "sqrt")
CPU_REAL_LIMIT = 512 * MiB  # bigger configurations are always accounted on meta
SPEC_CONFIG = {"layers": 24, "width": 4096, "batch": 16384}  # bf16, the GPU-sized model


def live_bytes_tracker(torch: Any, ignore: set[int]) -> Any:
    # Imported by name so type checking does not depend on torch being installed.
    dispatch: Any = importlib.import_module("torch.utils._python_dispatch")
    tree_flatten = importlib.import_module("torch.utils._pytree").tree_flatten

    class LiveBytes(dispatch.TorchDispatchMode):  # type: ignore[misc]
        """Bytes of the storages created under the mode that are still alive, and the peak."""

        def __init__(self) -> None:
            super().__init__()
            self.live = 0
            self.peak = 0
            self._sizes: dict[int, int] = {}

        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if not isinstance(t, torch.Tensor):
                    continue
                storage = t.untyped_storage()
                key = id(storage)
                if key in self._sizes or key in ignore:
                    continue  # a view of a storage already counted, or a weight / input
                self._sizes[key] = n = int(storage.nbytes())
                self.live += n
                self.peak = max(self.peak, self.live)
                weakref.finalize(storage, self._dead, key)
            return out

        def _dead(self, key: int) -> None:
            self.live -= self._sizes.pop(key)

    return LiveBytes()


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
    segments = max(1, round(math.sqrt(len(model))))
    return checkpoint_sequential(model, segments, x, use_reentrant=False)


def account(
    torch: Any, layers: int, width: int, batch: int, device: str, dtype: Any
) -> dict[str, dict[str, Any]]:
    """Live activation bytes after forward and at the peak of backward, per mode."""
    out: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        torch.manual_seed(0)
        model = build(torch, layers, width, device, dtype)
        x = torch.randn(batch, width, dtype=dtype, device=device, requires_grad=True)
        ignore = {id(p.untyped_storage()) for p in model.parameters()}
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
        times = []
        after = peak = 0
        for _ in range(3):
            model.zero_grad(set_to_none=True)
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
        },
        "modes": small,
        "spec_config_meta": {"config": {**SPEC_CONFIG, "dtype": "bfloat16"}, "modes": big},
        "simulated": False,
    }
    t = ctx.tr

    def row(mode: str, r: dict[str, Any], fmt: Any) -> str:
        step = (
            "" if r["step_s"] is None else t(f", step {r['step_s']} s", f", βήμα {r['step_s']} s")
        )
        return (
            f"- {mode}: "
            + t("after forward ", "μετά το forward ")
            + f"`{fmt(r['after_forward_bytes'])}`, peak `{fmt(r['peak_bytes'])}`{step}"
        )

    kind = {
        "cuda": t(
            "measured on the GPU (bf16, above weights and input)",
            "μέτρηση στη GPU (bf16, πάνω από βάρη και είσοδο)",
        ),
        "cpu": t(
            "live activation bytes on CPU tensors (fp32)",
            "ζωντανά bytes ενεργοποιήσεων σε τανυστές CPU (fp32)",
        ),
        "meta": t(
            "live activation bytes on the meta device (fp32, no RAM)",
            "ζωντανά bytes ενεργοποιήσεων στη συσκευή meta (fp32, χωρίς RAM)",
        ),
    }[where]
    lines = [
        title_line(
            ctx,
            "Gradient (activation) checkpointing",
            "Gradient checkpointing (επανυπολογισμός ενεργοποιήσεων)",
            False,
        ),
        t(
            f"{layers} × (Linear({width}, {width}) + GELU), batch {batch}: {kind}",
            f"{layers} × (Linear({width}, {width}) + GELU), batch {batch}: {kind}",
        ),
        *[row(m, small[m], lambda n: mib(n)) for m in MODES],
        t(
            f"At GPU scale ({SPEC_CONFIG['layers']} × {SPEC_CONFIG['width']}, batch "
            f"{SPEC_CONFIG['batch']}, bf16, meta accounting):",
            f"Σε κλίμακα GPU ({SPEC_CONFIG['layers']} × {SPEC_CONFIG['width']}, batch "
            f"{SPEC_CONFIG['batch']}, bf16, λογιστική στη meta):",
        ),
        *[row(m, big[m], lambda n: gib(n)) for m in MODES],
        t(
            "Checkpointing keeps only segment inputs and recomputes the rest in backward: "
            "less activation memory for about one extra forward pass.",
            "Το checkpointing κρατά μόνο τις εισόδους των τμημάτων και ξαναϋπολογίζει τα "
            "υπόλοιπα στο backward: λιγότερη μνήμη ενεργοποιήσεων με κόστος περίπου ένα "
            "επιπλέον forward.",
        ),
    ]
    fig, (ax,) = _plot.figure(8.0, 3.2)
    _plot.grouped_bars(
        ax,
        list(MODES),
        [
            (
                t("after forward", "μετά το forward"),
                [small[m]["after_forward_bytes"] / MiB for m in MODES],
                _plot.ALLOCATED,
            ),
            (t("peak", "μέγιστο"), [small[m]["peak_bytes"] / MiB for m in MODES], _plot.FREE),
        ],
        ylabel="MiB",
        fmt="{:.0f}",
        title=t(
            f"Activation memory, {layers} layers: with and without checkpointing",
            f"Μνήμη ενεργοποιήσεων, {layers} επίπεδα: με και χωρίς checkpointing",
        ),
    )
    return DemoOutput("\n".join(lines), metrics, _plot.to_png(fig), ctx.device_line(), False)


DEMO = Demo(
    id="activation-checkpointing",
    title="Gradient (activation) checkpointing",
    title_el="Gradient checkpointing (επανυπολογισμός ενεργοποιήσεων)",
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
