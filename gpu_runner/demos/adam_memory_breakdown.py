"""Adam in mixed precision: what each parameter costs (weights, grads, fp32 master, m, v).

The arithmetic holds on any device: bf16 weights (2 B) + bf16 grads (2 B) + fp32 master
weights (4 B) + Adam's two fp32 moments (8 B) = 16 B per parameter — the same 16 B as plain
fp32 training. Mixed precision saves activation memory and time, not optimizer memory.
With torch, a small model's buffers are measured after one optimizer step.
"""

from __future__ import annotations

from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._context import DemoOutput, RunContext, gib, title_line
from gpu_runner.demos._registry import Demo, DemoKind, Param

SCHEMES: dict[str, dict[str, int]] = {
    "fp32": {"weights": 4, "grads": 4, "master": 0, "adam_m": 4, "adam_v": 4},
    "mixed (bf16 + fp32 master)": {"weights": 2, "grads": 2, "master": 4, "adam_m": 4, "adam_v": 4},
    "bf16, no master": {"weights": 2, "grads": 2, "master": 0, "adam_m": 4, "adam_v": 4},
}
PARTS = ("weights", "grads", "master", "adam_m", "adam_v")
GPUS = {"H100 80GB": 80 * 10**9, "H200 141GB": 141 * 10**9}


def measure(torch: Any, cuda: bool) -> dict[str, Any]:
    """Bytes of each buffer after one mixed-precision AdamW step on a small model."""
    device = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    with torch.device(device):
        master = torch.nn.Sequential(
            torch.nn.Linear(512, 512), torch.nn.GELU(), torch.nn.Linear(512, 512)
        )
        x = torch.randn(64, 512)
    work = [p.detach().to(torch.bfloat16).requires_grad_() for p in master.parameters()]
    n = sum(p.numel() for p in work)
    w0, b0, w1, b1 = work
    h = torch.nn.functional.gelu(x.to(torch.bfloat16) @ w0.T + b0) @ w1.T + b1
    h.float().pow(2).mean().backward()
    for m, w in zip(master.parameters(), work, strict=True):
        m.grad = w.grad.float()  # the fp32 gradient an optimizer step reads
    opt = torch.optim.AdamW(master.parameters(), lr=1e-3)
    opt.step()
    states = [t for s in opt.state.values() for t in s.values() if isinstance(t, torch.Tensor)]
    moments = [t for s in opt.state.values() for k, t in s.items() if k.startswith("exp_avg")]
    out = {
        "parameters": n,
        "weights_bytes": sum(w.nbytes for w in work),
        "grads_bytes": sum(w.grad.nbytes for w in work),
        "master_bytes": sum(p.nbytes for p in master.parameters()),
        "adam_moments_bytes": sum(t.nbytes for t in moments),
        "adam_state_bytes": sum(t.nbytes for t in states),  # + one `step` scalar per tensor
        "device": device,
    }
    out["bytes_per_parameter"] = round(
        (
            out["weights_bytes"]
            + out["grads_bytes"]
            + out["master_bytes"]
            + out["adam_moments_bytes"]
        )
        / n,
        3,
    )
    return out


def run(ctx: RunContext) -> DemoOutput:
    n = ctx.int("params_m") * 10**6
    per_param = {k: sum(v.values()) for k, v in SCHEMES.items()}
    totals = {k: b * n for k, b in per_param.items()}
    check = measure(ctx.torch, ctx.cuda) if ctx.torch is not None else None
    metrics: dict[str, Any] = {
        "parameters": n,
        "bytes_per_parameter": per_param,
        "breakdown": SCHEMES,
        "total_bytes": totals,
        "fits": {gpu: {k: v <= cap for k, v in totals.items()} for gpu, cap in GPUS.items()},
        "measured": check,
        "simulated": False,
    }
    t = ctx.tr
    mixed = SCHEMES["mixed (bf16 + fp32 master)"]
    lines = [
        title_line(
            ctx,
            "Adam memory per parameter (mixed precision)",
            "Μνήμη του Adam ανά παράμετρο (μικτή ακρίβεια)",
            False,
        ),
        t(
            f"Mixed precision, per parameter: weights {mixed['weights']} B (bf16) + grads "
            f"{mixed['grads']} B + fp32 master {mixed['master']} B + Adam m {mixed['adam_m']} B "
            f"+ v {mixed['adam_v']} B = *{per_param['mixed (bf16 + fp32 master)']} B*; "
            f"plain fp32 is also {per_param['fp32']} B, bf16 without a master copy "
            f"{per_param['bf16, no master']} B.",
            f"Μικτή ακρίβεια, ανά παράμετρο: βάρη {mixed['weights']} B (bf16) + κλίσεις "
            f"{mixed['grads']} B + fp32 master {mixed['master']} B + Adam m {mixed['adam_m']} B "
            f"+ v {mixed['adam_v']} B = *{per_param['mixed (bf16 + fp32 master)']} B*· σε "
            f"καθαρό fp32 επίσης {per_param['fp32']} B, bf16 χωρίς master αντίγραφο "
            f"{per_param['bf16, no master']} B.",
        ),
        t(
            f"For {n / 1e9:g} billion parameters: {gib(totals['mixed (bf16 + fp32 master)'], 1)} "
            "before any activation — "
            + ", ".join(
                f"{gpu}: {'fits' if metrics['fits'][gpu]['fp32'] else 'does not fit'}"
                for gpu in GPUS
            )
            + ".",
            f"Για {n / 1e9:g} δισ. παραμέτρους: {gib(totals['mixed (bf16 + fp32 master)'], 1)} "
            "πριν από οποιαδήποτε ενεργοποίηση — "
            + ", ".join(
                f"{gpu}: {'χωράει' if metrics['fits'][gpu]['fp32'] else 'δεν χωράει'}"
                for gpu in GPUS
            )
            + ".",
        ),
    ]
    if check is not None:
        lines.append(
            t(
                f"Measured on {check['device']} ({check['parameters']:,} parameters, one AdamW "
                f"step): weights {check['weights_bytes']:,} B, grads {check['grads_bytes']:,} B, "
                f"master {check['master_bytes']:,} B, Adam m+v {check['adam_moments_bytes']:,} B "
                f"→ *{check['bytes_per_parameter']} B/parameter*.",
                f"Μέτρηση σε {check['device']} ({check['parameters']:,} παράμετροι, ένα βήμα "
                f"AdamW): βάρη {check['weights_bytes']:,} B, κλίσεις {check['grads_bytes']:,} B, "
                f"master {check['master_bytes']:,} B, Adam m+v {check['adam_moments_bytes']:,} B "
                f"→ *{check['bytes_per_parameter']} B/παράμετρο*.",
            )
        )
    else:
        lines.append(
            t(
                "Measurement: n/a (needs torch: pip install 'quizbot[gpu]').",
                "Μέτρηση: n/a (χρειάζεται torch: pip install 'quizbot[gpu]').",
            )
        )
    lines.append(
        t(
            "ZeRO/FSDP shard these 16 B across GPUs; 8-bit optimizers shrink m and v.",
            "Τα ZeRO/FSDP μοιράζουν αυτά τα 16 B σε πολλές GPU· οι 8-bit optimizers "
            "μικραίνουν τα m και v.",
        )
    )

    fig, (ax,) = _plot.figure(8.0, 3.2)
    colours = {
        "weights": _plot.ALLOCATED,
        "grads": "#8172B3",
        "master": _plot.MUTED,
        "adam_m": _plot.FREE,
        "adam_v": "#C44E52",
    }
    labels = list(SCHEMES)
    bottom = [0.0] * len(labels)
    for part in PARTS:
        values = [SCHEMES[k][part] for k in labels]
        ax.bar(labels, values, bottom=bottom, color=colours[part], label=part)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel(t("bytes per parameter", "bytes ανά παράμετρο"))
    ax.set_title(
        t("Training memory per parameter with Adam", "Μνήμη εκπαίδευσης ανά παράμετρο με Adam"),
        fontsize=10,
    )
    ax.legend(fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.12))
    device = ctx.device_line() if check is not None else "arithmetic, no GPU (torch not installed)"
    return DemoOutput("\n".join(lines), metrics, _plot.to_png(fig), device, False)


DEMO = Demo(
    id="adam-memory-breakdown",
    title="Adam memory per parameter in mixed precision",
    title_el="Μνήμη του Adam ανά παράμετρο με μικτή ακρίβεια",
    kind=DemoKind.MIXED,
    run=run,
    params=(Param("params_m", int, 1, 1_000_000, 7000, "model size, millions of parameters"),),
)
