"""Attention memory: naive attention's N x N score buffer vs `scaled_dot_product_attention`.

Naive attention materialises ``q @ k.T`` (batch x heads x N x N) and, while it is scaled
and soft-maxed, a second buffer of the same shape: about 2 x that buffer at the peak,
growing as N^2. `torch.nn.functional.scaled_dot_product_attention` runs a fused kernel
that works on tiles and never holds the N x N matrix: its extra memory grows as N.

Measured in inference (``torch.no_grad``; training would also keep the soft-max output
for backward). On CUDA: ``max_memory_allocated()`` above what was allocated before the
call. On CPU: every allocation and free the CPU allocator reports to `torch.profiler`
(``profile_memory=True``), replayed in time order to find the peak above the start.
Sequence lengths whose naive buffers would not fit the measuring budget are shown as
shape arithmetic only, and say so.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._context import DemoOutput, RunContext, title_line
from gpu_runner.demos._registry import Demo, DemoKind, Param
from gpu_runner.demos._step_plots import stamp
from gpu_runner.demos._units import nbytes, number, unit_for

MiB = 1 << 20
GiB = 1 << 30
CPU_BUDGET = 640 * MiB  # predicted naive peak above which a CPU point is arithmetic only
GPU_BUDGET = 8 * GiB
POINTS = 5  # sequence lengths: seq_len / 16 ... seq_len, doubling


def score_bytes(batch: int, heads: int, n: int, elem: int) -> int:
    return batch * heads * n * n * elem


def naive_attention(torch: Any, q: Any, k: Any, v: Any) -> Any:
    scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.shape[-1]))
    return torch.softmax(scores, dim=-1) @ v


def fused_attention(torch: Any, q: Any, k: Any, v: Any) -> Any:
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def cpu_peak(torch: Any, fn: Any, q: Any, k: Any, v: Any) -> int | None:
    """Peak bytes above the start, from the profiler's allocation events (None when this
    torch's profiler does not expose them)."""
    from torch.profiler import ProfilerActivity, profile

    try:
        from torch._C._profiler import _EventType
    except ImportError:
        return None
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as p:
        out = fn(torch, q, k, v)
        del out
    events: list[tuple[int, int]] = []
    stack = list(p.profiler.kineto_results.experimental_event_tree())
    while stack:
        node = stack.pop()
        if node.tag == _EventType.Allocation:
            events.append((node.start_time_ns, int(node.extra_fields.alloc_size)))
        stack.extend(node.children)
    live = peak = 0
    for _, size in sorted(events):
        live += size
        peak = max(peak, live)
    return peak if events else None


def cuda_peak(torch: Any, fn: Any, q: Any, k: Any, v: Any) -> tuple[int, float]:
    """Peak bytes above the start and the median time of three calls (ms)."""
    times, peak = [], 0
    for _ in range(3):
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        with torch.no_grad():
            out = fn(torch, q, k, v)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
        peak = int(torch.cuda.max_memory_allocated() - base)
        del out
    return peak, round(statistics.median(times), 3)


def measure(ctx: RunContext, n: int, shape: tuple[int, int, int], dtype: Any) -> dict[str, Any]:
    torch = ctx.torch
    batch, heads, dim = shape
    torch.manual_seed(0)
    device = "cuda" if ctx.cuda else "cpu"
    q, k, v = (torch.randn(batch, heads, n, dim, dtype=dtype, device=device) for _ in range(3))
    row: dict[str, Any] = {}
    for name, fn in (("naive", naive_attention), ("sdpa", fused_attention)):
        if ctx.cuda:
            row[f"{name}_peak_bytes"], row[f"{name}_ms"] = cuda_peak(torch, fn, q, k, v)
        else:
            row[f"{name}_peak_bytes"] = cpu_peak(torch, fn, q, k, v)
    del q, k, v
    if ctx.cuda:
        torch.cuda.empty_cache()
    return row


def run(ctx: RunContext) -> DemoOutput:
    seq, heads, dim, batch = (ctx.int(n) for n in ("seq_len", "heads", "head_dim", "batch"))
    bf16 = bool(ctx.int("bf16"))
    elem = 2 if bf16 else 4
    dtype_name = "bfloat16" if bf16 else "float32"
    lengths = sorted({max(64, seq >> i) for i in range(POINTS)})
    budget = GPU_BUDGET if ctx.cuda else CPU_BUDGET
    rows: list[dict[str, Any]] = []
    for n in lengths:
        s = score_bytes(batch, heads, n, elem)
        row: dict[str, Any] = {
            "seq_len": n,
            "score_buffer_bytes": s,
            "naive_predicted_bytes": 2 * s,
            "measured": False,
        }
        if ctx.torch is not None and 2 * s <= budget:
            dtype = ctx.torch.bfloat16 if bf16 else ctx.torch.float32
            row.update(measure(ctx, n, (batch, heads, dim), dtype), measured=True)
        rows.append(row)
    how = "cuda" if ctx.cuda else "cpu-profiler" if ctx.torch is not None else "arithmetic"
    metrics = {
        "config": {
            "seq_len": seq,
            "heads": heads,
            "head_dim": dim,
            "batch": batch,
            "dtype": dtype_name,
        },
        "points": rows,
        "measured_with": how,
        "simulated": False,
    }
    lines = report(ctx, rows, (batch, heads, dim, dtype_name), how)
    png = plot(ctx, rows, dtype_name)
    device = ctx.device_line() if ctx.torch is not None else "arithmetic, no GPU (no torch)"
    return DemoOutput("\n".join(lines), metrics, png, device, False)


def report(
    ctx: RunContext, rows: list[dict[str, Any]], cfg: tuple[int, int, int, str], how: str
) -> list[str]:
    t, el = ctx.tr, ctx.el
    batch, heads, dim, dtype = cfg
    last = rows[-1]
    n, s = last["seq_len"], last["score_buffer_bytes"]
    lines = [
        title_line(
            ctx,
            "Attention memory: naive N×N scores vs scaled_dot_product_attention",
            "Μνήμη του attention: αφελές N×N πίνακας βαθμολογιών vs scaled_dot_product_attention",
            False,
        ),
        t(
            f"batch {batch} × {heads} heads × head_dim {dim}, {dtype}, inference. The naive "
            f"score buffer `q @ k.T` at N = {number(n)} is {batch}·{heads}·N² · "
            f"{2 if dtype == 'bfloat16' else 4} B = *{nbytes(s)}*; scaling and soft-max make a "
            f"second one, so the naive peak is about *{nbytes(2 * s)}* — ×4 for every doubling "
            "of N.",
            f"batch {batch} × {heads} κεφαλές × head_dim {dim}, {dtype}, inference. Ο αφελής "
            f"πίνακας βαθμολογιών `q @ k.T` για N = {number(n, el=True)} είναι "
            f"{batch}·{heads}·N² · {2 if dtype == 'bfloat16' else 4} B = "
            f"*{nbytes(s, el=True)}*· η κλιμάκωση και το soft-max φτιάχνουν δεύτερο ίδιο, άρα "
            f"η μέγιστη μνήμη είναι περίπου *{nbytes(2 * s, el=True)}* — ×4 σε κάθε διπλασιασμό "
            "του N.",
        ),
    ]
    method = {
        "cuda": t(
            "Measured on the GPU: `max_memory_allocated()` above the start, per call.",
            "Μέτρηση στη GPU: `max_memory_allocated()` πάνω από την αρχή, ανά κλήση.",
        ),
        "cpu-profiler": t(
            "Measured on the CPU: every allocation `torch.profiler` (profile_memory=True) "
            "records during the call, peak above the start.",
            "Μέτρηση στη CPU: κάθε δέσμευση που καταγράφει ο `torch.profiler` "
            "(profile_memory=True) κατά την κλήση, μέγιστο πάνω από την αρχή.",
        ),
        "arithmetic": t(
            "Shape arithmetic only: torch is not installed (pip install 'quizbot[gpu]').",
            "Μόνο αριθμητική σχημάτων: δεν υπάρχει torch (pip install 'quizbot[gpu]').",
        ),
    }[how]
    lines.append(method)
    skipped = [r["seq_len"] for r in rows if not r["measured"]]
    if skipped and how != "arithmetic":
        lines.append(
            t(
                f"N ≥ {number(skipped[0])}: arithmetic only (the naive buffers would exceed "
                "this run's measuring budget).",
                f"N ≥ {number(skipped[0], el=True)}: μόνο αριθμητική (τα αφελή buffers θα "
                "ξεπερνούσαν το όριο μέτρησης αυτής της εκτέλεσης).",
            )
        )
    for row in rows:
        if not row["measured"] or row["naive_peak_bytes"] is None:
            continue
        lines.append(
            f"- N = {number(row['seq_len'], el=el)}: "
            + t("naive ", "αφελές ")
            + f"`{nbytes(row['naive_peak_bytes'], el=el)}` · SDPA "
            f"`{nbytes(row['sdpa_peak_bytes'], el=el)}`"
            + (
                t(
                    f" ({number(row['naive_ms'], 2)} vs {number(row['sdpa_ms'], 2)} ms)",
                    f" ({number(row['naive_ms'], 2, el=True)} vs "
                    f"{number(row['sdpa_ms'], 2, el=True)} ms)",
                )
                if "naive_ms" in row
                else ""
            )
        )
    lines.append(
        t(
            "SDPA's fused kernel (flash / memory-efficient on GPUs, a tiled kernel on CPU) "
            "never stores the N×N matrix: its extra memory is the output and per-row "
            "statistics, linear in N. In training the naive path also keeps the soft-max "
            "output for backward.",
            "Ο συγχωνευμένος πυρήνας του SDPA (flash / memory-efficient στις GPU, πυρήνας με "
            "πλακίδια στη CPU) δεν αποθηκεύει ποτέ τον N×N πίνακα: η επιπλέον μνήμη του είναι η "
            "έξοδος και στατιστικά ανά γραμμή, γραμμικά ως προς N. Στην εκπαίδευση το αφελές "
            "μονοπάτι κρατά επιπλέον την έξοδο του soft-max για το backward.",
        )
    )
    return lines


def plot(ctx: RunContext, rows: list[dict[str, Any]], dtype: str) -> bytes:
    t = ctx.tr
    top = max(r["naive_predicted_bytes"] for r in rows)
    unit, scale = unit_for(top)
    fig, (ax,) = _plot.figure(7.5, 4.0)
    xs = [r["seq_len"] for r in rows]
    ax.plot(
        xs,
        [r["naive_predicted_bytes"] / scale for r in rows],
        "--",
        color=_plot.MUTED,
        label=t("2 × score buffer (arithmetic)", "2 × πίνακας βαθμολογιών (αριθμητική)"),
    )
    done = [r for r in rows if r["measured"] and r["naive_peak_bytes"] is not None]
    if done:
        for key, colour, marker, name in (
            ("naive_peak_bytes", _plot.FREE, "o", t("naive, measured", "αφελές, μέτρηση")),
            ("sdpa_peak_bytes", _plot.ALLOCATED, "s", t("SDPA, measured", "SDPA, μέτρηση")),
        ):
            ax.plot(
                [r["seq_len"] for r in done],
                [max(r[key], 1) / scale for r in done],
                marker=marker,
                color=colour,
                label=name,
            )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(xs)
    ax.set_xticklabels([number(x, el=ctx.el) for x in xs])
    ax.set_xlabel(t("sequence length N (log scale)", "μήκος ακολουθίας N (λογαριθμική κλίμακα)"))
    ax.set_ylabel(
        t(f"peak memory above start ({unit})", f"μέγιστη μνήμη πάνω από την αρχή ({unit})")
    )
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7.5, loc="upper left", frameon=False)
    last = rows[-1]
    if len(done) >= 2:
        a, d = done[-2], done[-1]
        grow = [d[k] / max(a[k], 1) for k in ("naive_peak_bytes", "sdpa_peak_bytes")]
        finding = t(
            f"N = {number(d['seq_len'])}: naive {nbytes(d['naive_peak_bytes'])} vs SDPA "
            f"{nbytes(d['sdpa_peak_bytes'])}; doubling N: ×{number(grow[0], 1)} vs "
            f"×{number(grow[1], 1)}",
            f"N = {number(d['seq_len'], el=True)}: αφελές {nbytes(d['naive_peak_bytes'], el=True)}"
            f" vs SDPA {nbytes(d['sdpa_peak_bytes'], el=True)}· διπλάσιο N: "
            f"×{number(grow[0], 1, el=True)} vs ×{number(grow[1], 1, el=True)}",
        )
    else:
        finding = t(
            f"N = {number(last['seq_len'])}: naive needs about "
            f"{nbytes(last['naive_predicted_bytes'])} (×4 per doubling of N)",
            f"N = {number(last['seq_len'], el=True)}: το αφελές θέλει περίπου "
            f"{nbytes(last['naive_predicted_bytes'], el=True)} (×4 ανά διπλασιασμό του N)",
        )
    device = ctx.device_line() if ctx.torch is not None else t("arithmetic only", "μόνο αριθμητική")
    stamp(fig, ax, finding, device, f"{dtype}, inference, {t('log–log', 'λογαριθμικοί άξονες')}")
    return _plot.to_png(fig)


DEMO = Demo(
    id="attention-memory",
    title="Attention memory: naive N×N scores vs scaled_dot_product_attention",
    title_el="Μνήμη του attention: αφελείς βαθμολογίες N×N vs scaled_dot_product_attention",
    kind=DemoKind.MIXED,
    run=run,
    params=(
        Param("seq_len", int, 128, 65536, 2048, "sequence length N (longest point)"),
        Param("heads", int, 1, 64, 8, "attention heads"),
        Param("head_dim", int, 16, 256, 64, "features per head"),
        Param("batch", int, 1, 16, 1, "sequences per batch"),
        Param("bf16", int, 0, 1, 0, "1 = bfloat16, 0 = float32"),
    ),
    timeout=120.0,
)
