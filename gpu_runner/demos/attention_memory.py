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
from gpu_runner.demos._context import DemoOutput, RunContext, RunKind, RunLabel
from gpu_runner.demos._registry import Demo, DemoKind, Param

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
    label = run_label(ctx, any(r["measured"] for r in rows))
    lines = report(ctx, rows, (batch, heads, dim, dtype_name), how)
    return ctx.output(
        ctx.t("Attention memory: naive N×N scores vs scaled_dot_product_attention"),
        lines,
        metrics,
        plot(ctx, rows, dtype_name),
        label,
    )


def run_label(ctx: RunContext, measured: bool) -> RunLabel:
    """GPU; CPU (peaks from the profiler, or none when every length is over the budget);
    arithmetic alone without torch."""
    if ctx.torch is None:
        return ctx.label(RunKind.ARITHMETIC)
    if ctx.cuda:
        return ctx.label(RunKind.GPU)
    what = (
        ctx.t("peaks from torch.profiler's CPU allocation events; GPU timings n/a")
        if measured
        else ctx.t(
            "nothing measured: every length is over the CPU measuring budget "
            "({value} MiB); shape arithmetic only",
            value=CPU_BUDGET >> 20,
        )
    )
    return ctx.label(RunKind.CPU, cpu_note=what)


def report(
    ctx: RunContext, rows: list[dict[str, Any]], cfg: tuple[int, int, int, str], how: str
) -> list[str]:
    t = ctx.t
    batch, heads, dim, dtype = cfg
    last = rows[-1]
    n, s = ctx.num(last["seq_len"]), last["score_buffer_bytes"]
    elem = 2 if dtype == "bfloat16" else 4
    lines = [
        t(
            "batch {batch} × {heads} heads × head_dim {dim}, {dtype}, inference. The "
            "naive score buffer `q @ k.T` at N = {n} is {batch}·{heads}·N² · {elem} "
            "B = *{s}*; scaling and soft-max make a second one, so the naive peak is "
            "about *{size}* — ×4 for every doubling of N.",
            batch=batch,
            heads=heads,
            dim=dim,
            dtype=dtype,
            n=n,
            elem=elem,
            s=ctx.size(s),
            size=ctx.size(2 * s),
        ),
    ]
    methods = {
        "cuda": t("Measured on the GPU: `max_memory_allocated()` above the start, per call."),
        "cpu-profiler": t(
            "Measured on the CPU: every allocation `torch.profiler` "
            "(`profile_memory=True`) records during the call, peak above the start."
        ),
    }
    if how in methods:  # arithmetic alone: the label's closing note says so
        lines.append(methods[how])
    skipped = [r["seq_len"] for r in rows if not r["measured"]]
    if skipped and how != "arithmetic":
        lines.append(
            t(
                "N ≥ {skipped_0}: arithmetic only (the naive buffers would exceed this "
                "run's measuring budget).",
                skipped_0=ctx.num(skipped[0]),
            )
        )
    for row in rows:
        if not row["measured"] or row["naive_peak_bytes"] is None:
            continue
        timing = (
            f" ({ctx.num(row['naive_ms'], 2)} vs {ctx.num(row['sdpa_ms'], 2)} ms)"
            if "naive_ms" in row
            else ""
        )
        lines.append(
            f"- N = {ctx.num(row['seq_len'])}: "
            + t("naive ")
            + f"{ctx.size(row['naive_peak_bytes'])} · SDPA {ctx.size(row['sdpa_peak_bytes'])}"
            + timing
        )
    lines.append(
        t(
            "SDPA's fused kernel (flash / memory-efficient on GPUs, a tiled kernel "
            "on CPU) never stores the N×N matrix: its extra memory is the output and "
            "per-row statistics, linear in N. In training the naive path also keeps "
            "the soft-max output for backward."
        )
    )
    return lines


def finding(ctx: RunContext, rows: list[dict[str, Any]]) -> str:
    """The plot's title: the last two measured points' growth, else the arithmetic."""
    t = ctx.t
    done = [r for r in rows if r["measured"] and r["naive_peak_bytes"] is not None]
    if len(done) >= 2:
        a, d = done[-2], done[-1]
        naive, sdpa = (d[k] / max(a[k], 1) for k in ("naive_peak_bytes", "sdpa_peak_bytes"))
        n, x, y = ctx.num(d["seq_len"]), ctx.num(naive, 1), ctx.num(sdpa, 1)
        return t(
            "N = {n}: naive {naive_peak_bytes} vs SDPA {sdpa_peak_bytes}; doubling N: ×{x} vs ×{y}",
            n=n,
            naive_peak_bytes=ctx.size(d["naive_peak_bytes"]),
            sdpa_peak_bytes=ctx.size(d["sdpa_peak_bytes"]),
            x=x,
            y=y,
        )
    last = rows[-1]
    n, need = ctx.num(last["seq_len"]), ctx.size(last["naive_predicted_bytes"])
    return t(
        "N = {n}: naive attention needs about {need} (×4 per doubling of N)",
        n=n,
        need=need,
    )


def plot(ctx: RunContext, rows: list[dict[str, Any]], dtype: str) -> Any:
    """Peak memory against N on log–log axes (base 2: a doubling of N is one step, the
    naive line climbs two); the arithmetic drawn dashed, measured points marked."""
    t = ctx.t
    fig, (ax,) = _plot.figure(8.0, 4.2)
    xs = [r["seq_len"] for r in rows]
    ax.plot(
        xs,
        [r["naive_predicted_bytes"] for r in rows],
        "--",
        color=_plot.MUTED,
        label=t("2 × score buffer (arithmetic)"),
    )
    done = [r for r in rows if r["measured"] and r["naive_peak_bytes"] is not None]
    for key, colour, marker, name in (
        (
            "naive_peak_bytes",
            _plot.FREE,
            "o",
            t("naive, measured"),
        ),
        (
            "sdpa_peak_bytes",
            _plot.ALLOCATED,
            "s",
            t("SDPA, measured"),
        ),
    ):
        if done:
            ax.plot(
                [r["seq_len"] for r in done],
                [max(r[key], 1) for r in done],
                marker=marker,
                color=colour,
                label=name,
            )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(xs)
    ax.set_xticklabels([ctx.num(x) for x in xs])
    ax.minorticks_off()
    _plot.byte_ticks(ax, ctx.locale)
    ax.set_xlabel(t("sequence length N (log scale)"))
    ax.set_ylabel(t("peak above the start (log scale)"))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", frameon=False, title=f"{dtype}, inference")
    ax.set_title(finding(ctx, rows), loc="left")
    return fig


DEMO = Demo(
    id="attention-memory",
    title="Attention memory: naive N×N scores vs scaled_dot_product_attention",
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
