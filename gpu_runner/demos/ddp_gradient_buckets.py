"""DDP gradient buckets: how `DistributedDataParallel` groups gradients, and what the
buckets cost in memory with and without ``gradient_as_bucket_view``.

The rules (torch 2.13, `torch/nn/parallel/distributed.py` and `c10d/reducer.cpp`): after
the first iteration the reducer rebuilds its buckets in the order gradients became ready
(for a plain stack of layers: the reverse of `parameters()`); it fills a bucket until its
bytes reach the limit, then starts the next. The first bucket's limit is 1 MiB
(`dist._DEFAULT_FIRST_BUCKET_BYTES`) only when `bucket_cap_mb` is left unset; an explicit
`bucket_cap_mb` applies to every bucket. (Until then, with `find_unused_parameters=False`,
all gradients share one bucket.) Every bucket is a flat buffer of its gradients: without
``gradient_as_bucket_view`` each `param.grad` is a second copy (2 × the gradient bytes);
with it the gradients are views into the buckets (1 ×).

The rules are applied as arithmetic on every host; with torch, a world-size-1 process
group (gloo on CPU, NCCL on a GPU) runs three real iterations, and a communication hook
records each bucket's buffer (it returns the buffer as is: at world size 1 an all-reduce
changes nothing). Memory is measured by distinct storages of the gradients and buckets,
and on a GPU also by `memory_allocated()`.
"""

from __future__ import annotations

from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._context import DemoOutput, RunContext
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20
FIRST_BUCKET_BYTES = 1 << 20  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
DEFAULT_CAP_MB = 25


def parameter_bytes(layers: int, width: int) -> list[tuple[str, int]]:
    """(name, bytes) of a `Sequential` of `Linear(width, width)` in `parameters()` order."""
    out: list[tuple[str, int]] = []
    for i in range(layers):
        out += [(f"{i}.weight", width * width * 4), (f"{i}.bias", width * 4)]
    return out


def assign_buckets(sizes: list[tuple[str, int]], cap_mb: int) -> list[list[str]]:
    """The rebuilt buckets, in reduction order (bucket 0 is all-reduced first)."""
    cap = (cap_mb or DEFAULT_CAP_MB) * MiB
    limit = FIRST_BUCKET_BYTES if cap_mb == 0 else cap
    buckets: list[list[str]] = []
    current: list[str] = []
    filled = 0
    for name, n in reversed(sizes):  # gradients become ready last layer first
        current.append(name)
        filled += n
        if filled >= limit:
            buckets.append(current)
            current, filled, limit = [], 0, cap
    if current:
        buckets.append(current)
    return buckets


def measure(ctx: RunContext, layers: int, width: int, cap_mb: int) -> dict[str, Any]:
    """Three real DDP iterations per `gradient_as_bucket_view` setting. On a GPU NCCL is
    tried first; gloo (which also takes CUDA tensors) when NCCL cannot start."""
    dist = ctx.torch.distributed
    backends = ["nccl", "gloo"] if ctx.cuda and dist.is_nccl_available() else ["gloo"]
    failed: list[str] = []
    for backend in backends:
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
        try:
            return {
                "backend": backend,
                "failed_backends": failed,
                **{
                    ("view" if view else "copy"): one_ddp(
                        ctx.torch, ctx.cuda, layers, width, cap_mb, view
                    )
                    for view in (False, True)
                },
            }
        except RuntimeError as exc:
            if backend == backends[-1]:
                raise
            failed.append(f"{backend}: {str(exc).splitlines()[0][:200] if str(exc) else exc!r}")
        finally:
            dist.destroy_process_group()
    raise AssertionError("unreachable: the last backend re-raises")


def one_ddp(torch: Any, cuda: bool, layers: int, width: int, cap_mb: int, view: bool) -> Any:
    from torch.nn.parallel import DistributedDataParallel

    device = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    with torch.device(device):
        model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(layers)])
        x = torch.randn(8, width)
    names = {id(p): n for n, p in model.named_parameters()}
    base = torch.cuda.memory_allocated() if cuda else 0
    ddp = DistributedDataParallel(model, bucket_cap_mb=cap_mb or None, gradient_as_bucket_view=view)
    seen: list[tuple[list[str], Any]] = []
    # DDP checks a hook's annotations at run time; a lambda has none to check.
    ddp.register_comm_hook(None, lambda _state, bucket: record(torch, names, seen, bucket))
    for _ in range(3):  # the first iteration builds the real buckets for the second
        seen.clear()
        ddp(x).sum().backward()
    buffers = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for _, t in seen}
    grads = {
        p.grad.untyped_storage().data_ptr(): p.grad.untyped_storage().nbytes()
        for p in model.parameters()
    }
    out = {
        "buckets": [names_ for names_, _ in seen],
        "bucket_bytes": [int(t.numel() * t.element_size()) for _, t in seen],
        "grad_bytes": sum(grads.values()),
        "bucket_buffer_bytes": sum(buffers.values()),
        "total_bytes": sum({**grads, **buffers}.values()),
        "grads_are_bucket_views": set(grads) <= set(buffers),
    }
    if cuda:
        torch.cuda.synchronize()
        out["memory_allocated_above_model_bytes"] = int(torch.cuda.memory_allocated() - base)
    del ddp, model, x
    seen.clear()
    return out


def record(torch: Any, names: dict[int, str], seen: list[Any], bucket: Any) -> Any:
    """The communication hook: note the bucket, return its buffer unchanged (an
    all-reduce over one process would not change it either)."""
    seen.append(([names[id(p)] for p in bucket.parameters()], bucket.buffer()))
    done = torch.futures.Future()
    done.set_result(bucket.buffer())
    return done


def run(ctx: RunContext) -> DemoOutput:
    layers, width, cap_mb = ctx.int("layers"), ctx.int("width"), ctx.int("bucket_cap_mb")
    sizes = parameter_bytes(layers, width)
    grads = sum(n for _, n in sizes)
    rule = assign_buckets(sizes, cap_mb)
    size_of = dict(sizes)
    rule_bytes = [sum(size_of[n] for n in b) for b in rule]
    measured = measure(ctx, layers, width, cap_mb) if ctx.torch is not None else None
    metrics: dict[str, Any] = {
        "config": {"layers": layers, "width": width, "bucket_cap_mb": cap_mb or None},
        "gradient_bytes": grads,
        "rule_buckets": rule,
        "rule_bucket_bytes": rule_bytes,
        "predicted_bytes": {"copy": 2 * grads, "view": grads},
        "measured": measured,
        "simulated": False,
    }
    if measured is not None:
        metrics["rule_matches_ddp"] = all(measured[k]["buckets"] == rule for k in ("copy", "view"))
    label = ctx.torch_label(
        measured is not None,
        ctx.t(
            "buckets of a real world-size-1 DDP (gloo); bytes of the gradients' and "
            "buckets' storages, memory_allocated() n/a"
        ),
    )
    lines = report(ctx, metrics)
    return ctx.output(ctx.t("DDP gradient buckets"), lines, metrics, plot(ctx, metrics), label)


def span(names: list[str]) -> str:
    """``["5.bias", "5.weight", "4.bias", "4.weight"]`` -> ``"5–4"``."""
    first, last = names[0].split(".")[0], names[-1].split(".")[0]
    return first if first == last else f"{first}–{last}"


def report(ctx: RunContext, m: dict[str, Any]) -> list[str]:
    t = ctx.t
    cfg = m["config"]
    cap = cfg["bucket_cap_mb"]
    grads = ctx.size(m["gradient_bytes"])
    limits = (
        t(
            "`bucket_cap_mb` unset: the first bucket closes at 1 MiB, the rest at "
            "{default_cap_mb} MiB",
            default_cap_mb=DEFAULT_CAP_MB,
        )
        if cap is None
        else t(
            "`bucket_cap_mb={cap}`: every bucket, the first too, closes at {cap} MiB",
            cap=cap,
        )
    )
    lines = [
        t(
            "{layers} × Linear({width}, {width}), fp32 gradients {grads}. {limits}; "
            "a bucket closes once its bytes reach the limit, filled in the order "
            "gradients become ready (last layer first).",
            layers=cfg["layers"],
            width=cfg["width"],
            grads=grads,
            limits=limits,
        ),
    ]
    first = FIRST_BUCKET_BYTES if cap is None else cap * MiB
    over = [
        str(i)
        for i, n in enumerate(m["rule_bucket_bytes"])
        if n > (first if i == 0 else (cap or DEFAULT_CAP_MB) * MiB)
    ]
    for i, (names, n) in enumerate(zip(m["rule_buckets"], m["rule_bucket_bytes"], strict=True)):
        lines.append(
            t(
                "- bucket {i}: layers {span} ({names} tensors), {n}",
                i=i,
                span=span(names),
                names=len(names),
                n=ctx.size(n),
            )
        )
    if over:
        lines.append(
            t(
                "Bucket(s) {join} end above their limit: the tensor that crosses it "
                "stays in the bucket it fills.",
                join=", ".join(over),
            )
        )
    measured = m["measured"]
    if measured is not None:
        lines += measured_lines(ctx, m)
    lines.append(
        t(
            "With `gradient_as_bucket_view=True` each `param.grad` is a view into "
            "its bucket, so gradient memory is paid once instead of twice."
        )
    )
    return lines


def measured_lines(ctx: RunContext, m: dict[str, Any]) -> list[str]:
    """What the real DDP did: its buckets against the rules, and its gradient memory."""
    t = ctx.t
    measured = m["measured"]
    agree = (
        t("the same buckets") if m["rule_matches_ddp"] else t("*different buckets* (see metrics)")
    )
    lines = [
        t(
            "Real DDP (world size 1, {backend}, 3 iterations): {agree}.",
            backend=measured["backend"],
            agree=agree,
        )
    ]
    for key, setting in (("copy", "False"), ("view", "True")):
        r = measured[key]
        extra = (
            f" · `memory_allocated()` +{ctx.size(r['memory_allocated_above_model_bytes'])}"
            if "memory_allocated_above_model_bytes" in r
            else ""
        )
        grads, buffers = ctx.size(r["grad_bytes"]), ctx.size(r["bucket_buffer_bytes"])
        what = (
            t(
                "every `param.grad` is a view into the bucket buffers ({buffers})",
                buffers=buffers,
            )
            if r["grads_are_bucket_views"]
            else t(
                "`param.grad` {grads} in storages of their own + bucket buffers {buffers}",
                grads=grads,
                buffers=buffers,
            )
        )
        lines.append(
            f"- `gradient_as_bucket_view={setting}`: {what} = *{ctx.size(r['total_bytes'])}*{extra}"
        )
    return lines


def plot(ctx: RunContext, m: dict[str, Any]) -> Any:
    t = ctx.t
    fig, (left, right) = _plot.figure(9.0, 3.8, cols=2)
    bucket_plot(ctx, left, m)
    # Right: gradient memory, copies vs views (measured when torch ran, else the rule).
    measured = m["measured"]
    keys = ("copy", "view")
    grads = [measured[k]["grad_bytes"] if measured else m["gradient_bytes"] for k in keys]
    buckets = [
        measured[k]["total_bytes"] - measured[k]["grad_bytes"]
        if measured
        else m["gradient_bytes"] * (k == "copy")
        for k in keys
    ]
    total = [g + b for g, b in zip(grads, buckets, strict=True)]
    labels = ["False", "True"]
    right.bar(labels, [g / MiB for g in grads], color=_plot.ALLOCATED, label="param.grad")
    right.bar(
        labels,
        [b / MiB for b in buckets],
        bottom=[g / MiB for g in grads],
        color=_plot.FREE,
        label=t("bucket buffers (not shared)"),
    )
    for x, n in enumerate(total):
        _plot.bar_total(right, x, n / MiB, ctx.size(n))
    right.set_ylabel(t("gradient memory (MiB)"))
    right.set_xlabel("gradient_as_bucket_view")
    right.set_ylim(0, max(total) / MiB * 1.3)
    _plot.number_ticks(right, ctx.locale, digits=None)
    right.legend(loc="upper right", frameon=False)
    how = t("measured") if measured else t("rules")
    right.set_title(
        t(
            "gradient memory ({how})",
            how=how,
        ),
        loc="left",
    )
    buckets_n, before, after = len(m["rule_buckets"]), ctx.size(total[0]), ctx.size(total[1])
    fig.suptitle(
        t(
            "{buckets_n} buckets, last layer first; gradient_as_bucket_view=True: "
            "{before} → {after} of gradient memory",
            buckets_n=buckets_n,
            before=before,
            after=after,
        ),
        fontsize=10,
        fontweight="bold",
    )
    return fig


def bucket_plot(ctx: RunContext, ax: Any, m: dict[str, Any]) -> None:
    """The buckets in reduction order as one stacked bar, where each limit was reached."""
    t = ctx.t
    start = 0.0
    colours = [_plot.ALLOCATED, _plot.ACCENT]
    cap = (m["config"]["bucket_cap_mb"] or DEFAULT_CAP_MB) * MiB
    first = FIRST_BUCKET_BYTES if m["config"]["bucket_cap_mb"] is None else cap
    whole = sum(m["rule_bucket_bytes"])
    for i, (names, n) in enumerate(zip(m["rule_buckets"], m["rule_bucket_bytes"], strict=True)):
        ax.barh(0, n / MiB, left=start, height=0.6, color=colours[i % 2], edgecolor="white")
        inside = n >= 0.15 * whole  # a narrow bucket is labelled above its bar
        ax.text(
            start + n / MiB / 2,
            0 if inside else 0.42,
            f"#{i}\n{span(names)}\n{ctx.size(n)}",
            ha="center",
            va="center" if inside else "bottom",
            color="white" if inside else "black",
            fontsize=7.5,
        )
        limit = first if i == 0 else cap
        if limit <= n:
            ax.plot([start + limit / MiB] * 2, [-0.38, 0.38], color=_plot.LIMIT, linewidth=1.5)
        start += n / MiB
    ax.plot(
        [],
        [],
        color=_plot.LIMIT,
        linewidth=1.5,
        label=t("bucket limit"),
    )
    ax.legend(frameon=False, loc="upper right")
    ax.set_ylim(-0.6, 1.1)
    ax.set_yticks([])
    ax.set_xlabel(t("bucket bytes, in all-reduce order (MiB)"))
    _plot.number_ticks(ax, ctx.locale, axis="x", digits=None)
    ax.set_title(
        t("buckets: #, layers, bytes"),
        loc="left",
    )


DEMO = Demo(
    id="ddp-gradient-buckets",
    title="DDP gradient buckets and gradient_as_bucket_view",
    kind=DemoKind.MIXED,
    run=run,
    params=(
        Param("layers", int, 1, 48, 12, "Linear(width, width) layers"),
        Param("width", int, 16, 2048, 1024, "features per layer"),
        Param("bucket_cap_mb", int, 0, 256, 0, "0 = unset (25 MiB, first bucket 1 MiB)"),
    ),
    timeout=120.0,
)
