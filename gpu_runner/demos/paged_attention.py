"""Q5 — vLLM's PagedAttention: the KV cache in fixed-size blocks, not one max-length slab.

(a) Arithmetic: 64 seeded requests (mean lengths near ShareGPT's 161 prompt / 338 output
tokens) reserved four ways — contiguous max length (2048), power-of-two, exact, and
paged (`ceil(len / 16) · 16`) — with OPT-13B's 800 KiB of KV per token and a 12 GiB budget.
(b) With torch: a KV pool `[num_blocks, 2, block, heads, head_dim]` with shuffled block
tables; paged (gather) attention must equal contiguous attention.
"""

from __future__ import annotations

import math
import random
from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._context import DemoOutput, RunContext
from gpu_runner.demos._registry import Demo, DemoKind, Param

MAX_LEN = 2048
BUDGET = 12 << 30  # OPT-13B on an A100-40GB: 12 GiB left for the KV cache (paper, Table 1)
OPT13B_KV_PER_TOKEN = 2 * 40 * 5120 * 2  # 2 (K, V) · layers · hidden · fp16 = 800 KiB
LLAMA3_8B_KV_PER_TOKEN = 2 * 32 * 8 * 128 * 2  # GQA: 8 KV heads of 128 → 128 KiB


def requests(n: int, seed: int) -> list[tuple[int, int]]:
    """(prompt, output) token counts; exponential lengths, capped at MAX_LEN in total."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        prompt = max(1, min(MAX_LEN // 2, round(rng.expovariate(1 / 161))))
        output = max(1, min(MAX_LEN - prompt, round(rng.expovariate(1 / 338))))
        out.append((prompt, output))
    return out


def next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def reservations(reqs: list[tuple[int, int]], block: int) -> dict[str, list[int]]:
    return {
        "max": [MAX_LEN for _ in reqs],
        "pow2": [min(MAX_LEN, p + next_pow2(o)) for p, o in reqs],
        "exact": [p + o for p, o in reqs],
        "paged": [math.ceil((p + o) / block) * block for p, o in reqs],
    }


def decode_slots(
    reqs: list[tuple[int, int]], res: dict[str, list[int]], block: int
) -> tuple[int, dict[str, int], int]:
    """Tokens held and slots reserved, summed over every decoding step of every request,
    and the number of steps (the longest output) when all decode together.

    Contiguous schemes reserve their whole slab up front; paged allocates a block when the
    previous one is full, so only the last block is ever partly empty.
    """
    held = 0
    reserved = dict.fromkeys(res, 0)
    for i, (p, o) in enumerate(reqs):
        for step in range(1, o + 1):
            tokens = p + step
            held += tokens
            for name in ("max", "pow2", "exact"):
                reserved[name] += res[name][i]
            reserved["paged"] += math.ceil(tokens / block) * block
    return held, reserved, max(o for _, o in reqs)


def fits(slots: list[int], budget_slots: int) -> int:
    used = count = 0
    for s in slots:
        if used + s > budget_slots:
            break
        used += s
        count += 1
    return count


def attention_check(
    torch: Any, cuda: bool, reqs: list[tuple[int, int]], block: int, seed: int
) -> dict[str, Any]:
    device = "cuda" if cuda else "cpu"
    heads, dim, n_seq = 4, 32, 6
    lens = [min(p + o, 300) for p, o in reqs[:n_seq]]
    g = torch.Generator().manual_seed(seed)
    per_seq = [math.ceil(n / block) for n in lens]
    num_blocks = sum(per_seq)
    before = torch.cuda.memory_allocated() if cuda else 0
    pool = torch.zeros(num_blocks, 2, block, heads, dim)
    order = torch.randperm(num_blocks, generator=g).tolist()  # blocks need not be adjacent
    tables, keys, values = [], [], []
    for i, n in enumerate(lens):
        table = order[sum(per_seq[:i]) : sum(per_seq[: i + 1])]
        k = torch.randn(n, heads, dim, generator=g)
        v = torch.randn(n, heads, dim, generator=g)
        for j, b in enumerate(table):
            chunk = slice(j * block, min((j + 1) * block, n))
            pool[b, 0, : chunk.stop - chunk.start] = k[chunk]
            pool[b, 1, : chunk.stop - chunk.start] = v[chunk]
        tables.append(table)
        keys.append(k)
        values.append(v)
    q = torch.randn(n_seq, heads, dim, generator=g)
    pool, q = pool.to(device), q.to(device)
    pool_bytes = (
        (torch.cuda.memory_allocated() - before) if cuda else pool.numel() * pool.element_size()
    )
    scale = dim**-0.5
    paged = []
    for i, n in enumerate(lens):
        idx = torch.tensor(tables[i], device=device)
        k = pool[idx, 0].reshape(-1, heads, dim)[:n]
        v = pool[idx, 1].reshape(-1, heads, dim)[:n]
        w = torch.softmax(torch.einsum("hd,nhd->hn", q[i], k) * scale, dim=-1)
        paged.append(torch.einsum("hn,nhd->hd", w, v))
    # Contiguous reference: every sequence padded to the longest, masked.
    longest = max(lens)
    kc = torch.zeros(n_seq, longest, heads, dim, device=device)
    vc = torch.zeros(n_seq, longest, heads, dim, device=device)
    mask = torch.full((n_seq, longest), float("-inf"), device=device)
    for i, n in enumerate(lens):
        kc[i, :n], vc[i, :n], mask[i, :n] = keys[i].to(device), values[i].to(device), 0.0
    scores = torch.einsum("shd,snhd->shn", q, kc) * scale + mask[:, None, :]
    contiguous = torch.einsum("shn,snhd->shd", torch.softmax(scores, dim=-1), vc)
    out = torch.stack(paged)
    diff = float((out - contiguous).abs().max())
    max_len_bytes = n_seq * MAX_LEN * 2 * heads * dim * pool.element_size()
    return {
        "sequences": n_seq,
        "lengths": lens,
        "num_blocks": num_blocks,
        "match": bool(torch.allclose(out, contiguous, atol=1e-5, rtol=1e-4)),
        "max_abs_diff": diff,
        "pool_bytes": int(pool_bytes),
        "contiguous_max_len_bytes": int(max_len_bytes),
        "device": device,
    }


def run(ctx: RunContext) -> DemoOutput:
    n = ctx.int("requests")
    block = ctx.int("block_size")
    seed = ctx.int("seed")
    reqs = requests(n, seed)
    used = [p + o for p, o in reqs]
    res = reservations(reqs, block)
    budget_slots = BUDGET // OPT13B_KV_PER_TOKEN
    held, reserved, steps = decode_slots(reqs, res, block)
    schemes: dict[str, dict[str, Any]] = {}
    for name, slots in res.items():
        schemes[name] = {
            "reserved_slots": sum(slots),  # at completion
            "utilization": round(held / reserved[name], 4),
            # The batch decoding together, averaged over its steps: what the plot shows.
            "time_avg_reserved_slots": round(reserved[name] / steps, 1),
            "fit_in_budget": fits(slots, budget_slots),
        }
    last_block_waste = sum(res["paged"]) - sum(used)
    check = (
        attention_check(ctx.torch, ctx.cuda, reqs, block, seed) if ctx.torch is not None else None
    )
    metrics: dict[str, Any] = {
        "requests": n,
        "block_size": block,
        "mean_prompt": round(sum(p for p, _ in reqs) / n, 2),
        "mean_output": round(sum(o for _, o in reqs) / n, 2),
        "used_slots": sum(used),
        "decode_steps": steps,
        "time_avg_held_slots": round(held / steps, 1),
        "kv_bytes_per_token": {
            "opt-13b": OPT13B_KV_PER_TOKEN,
            "llama-3-8b": LLAMA3_8B_KV_PER_TOKEN,
        },
        "budget_bytes": BUDGET,
        "budget_slots": budget_slots,
        "max_len_sequences_in_budget": budget_slots // MAX_LEN,
        "schemes": schemes,
        "paged_last_block_waste_slots": last_block_waste,
        "attention_check": check,
        "simulated": False,
    }
    label = ctx.torch_label(
        check is not None,
        cpu_note=ctx.t("the KV figures are arithmetic; the attention check ran on the CPU"),
    )
    lines = _report(ctx, metrics, check)
    fig, (ax,) = _plot.figure(8.0, 3.8)
    _slots_plot(ctx, ax, metrics)
    return ctx.output(
        ctx.t("PagedAttention: KV cache in fixed-size blocks"), lines, metrics, fig, label
    )


def _report(ctx: RunContext, m: dict[str, Any], check: dict[str, Any] | None) -> list[str]:
    t = ctx.t
    n, block, schemes = m["requests"], m["block_size"], m["schemes"]
    pct = {k: ctx.pct(v["utilization"]) for k, v in schemes.items()}
    lines = [
        t(
            "{n} requests (mean prompt {mean_prompt}, output {mean_output} tokens). "
            "KV per token: OPT-13B {opt13b_kv_per_token}, Llama-3-8B "
            "{llama3_8b_kv_per_token}.",
            n=n,
            mean_prompt=ctx.num(m["mean_prompt"], 1),
            mean_output=ctx.num(m["mean_output"], 1),
            opt13b_kv_per_token=ctx.size(OPT13B_KV_PER_TOKEN),
            llama3_8b_kv_per_token=ctx.size(LLAMA3_8B_KV_PER_TOKEN),
        ),
        t("Share of reserved KV slots holding tokens, averaged over decoding:"),
        f"- max-len {MAX_LEN}: *{pct['max']}* · pow2: *{pct['pow2']}* · "
        f"exact: *{pct['exact']}* · paged ({block}): *{pct['paged']}*",
        t(
            "These figures count only slots reserved per sequence: they leave out "
            "external fragmentation. (The paper measured {orca_max} / {orca_pow2} / "
            "{orca_oracle} for Orca max / pow2 / oracle and {vllm} for vLLM, external "
            "fragmentation included.)",
            orca_max=ctx.pct(0.204),
            orca_pow2=ctx.pct(0.268),
            orca_oracle=ctx.pct(0.382),
            vllm=ctx.pct(0.963),
        ),
        t(
            "A 12 GiB KV budget is {budget_slots} slots of OPT-13B: "
            "{max_len_sequences_in_budget} sequences at {max_len} each; paged fits "
            "{fit_in_budget} of these requests. Paging wastes only the last block of "
            "each sequence ({paged_last_block_waste_slots} slots in all).",
            budget_slots=ctx.num(m["budget_slots"]),
            max_len_sequences_in_budget=m["max_len_sequences_in_budget"],
            max_len=MAX_LEN,
            fit_in_budget=schemes["paged"]["fit_in_budget"],
            paged_last_block_waste_slots=ctx.num(m["paged_last_block_waste_slots"]),
        ),
    ]
    if check is None:
        return lines
    same = check["match"]
    return [
        *lines,
        t(
            "Attention check on {device}: paged (gather through shuffled block "
            "tables) vs contiguous, {sequences} sequences: {outcome} (max |∆| "
            "`{max_abs_diff}`); pool {pool} vs max-length tensors {contiguous}.",
            device=check["device"],
            sequences=check["sequences"],
            outcome=t("equal") if same else t("DIFFERENT"),
            max_abs_diff=f"{check['max_abs_diff']:.1e}",  # code: Python's own format
            pool=ctx.size(check["pool_bytes"]),
            contiguous=ctx.size(check["contiguous_max_len_bytes"]),
        ),
    ]


def _slots_plot(ctx: RunContext, ax: Any, m: dict[str, Any]) -> None:
    """Time-averaged KV slots of the batch decoding together, against the budget."""
    t = ctx.t
    schemes, block, budget = m["schemes"], m["block_size"], m["budget_slots"]
    names = ["max", "pow2", "exact", "paged"]
    labels = [f"max-len {MAX_LEN}", "pow2", "exact", f"paged ({block})"]
    held = m["time_avg_held_slots"] / 1000
    reserved = [schemes[k]["time_avg_reserved_slots"] / 1000 for k in names]
    ax.bar(
        labels,
        [held] * 4,
        color=_plot.ALLOCATED,
        label=t("tokens held"),
    )
    ax.bar(
        labels,
        [r - held for r in reserved],
        bottom=[held] * 4,
        color=_plot.FREE,
        label=t("reserved, empty"),
    )
    for i, k in enumerate(names):
        _plot.bar_total(ax, i, reserved[i], ctx.pct(schemes[k]["utilization"]))
    _plot.mark_level(
        ax,
        budget / 1000,
        t(
            "12 GiB budget (OPT-13B): {budget} slots",
            budget=ctx.num(budget),
        ),
    )
    ax.set_ylabel(t("KV slots (thousands)"))
    _plot.number_ticks(ax, ctx.locale)
    ax.margins(y=0.12)
    ax.set_title(
        t(
            "Paged blocks: {utilization} of reserved KV slots hold tokens; max-len: "
            "{utilization_2}",
            utilization=ctx.pct(schemes["paged"]["utilization"]),
            utilization_2=ctx.pct(schemes["max"]["utilization"]),
        ),
    )
    ax.legend(loc="upper right")
    ax.text(
        0.99,
        0.70,
        t(
            "{requests} requests decoding together,\naveraged over {decode_steps} "
            "steps; % = tokens / reserved;\nexternal fragmentation not included",
            requests=m["requests"],
            decode_steps=m["decode_steps"],
        ),
        transform=ax.transAxes,
        ha="right",
        va="top",
        fontsize=7.5,
        color="#555555",
    )


DEMO = Demo(
    id="paged-attention",
    title="vLLM PagedAttention: fixed-size KV blocks",
    kind=DemoKind.MIXED,
    run=run,
    params=(
        Param("requests", int, 8, 256, 64, "number of requests"),
        Param("block_size", int, 1, 128, 16, "tokens per KV block (vLLM default 16)"),
        # Seed 177 gives means of 161.0 / 340.2 tokens, ShareGPT's 161.3 / 338.0.
        Param("seed", int, 0, 1_000_000, 177, "seed of the request lengths"),
    ),
)
