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
from gpu_runner.demos._context import DemoOutput, RunContext, title_line
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


def decode_utilization(
    reqs: list[tuple[int, int]], res: dict[str, list[int]], block: int
) -> dict[str, float]:
    """Tokens held / slots reserved, summed over every decoding step of every request.

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
    return {name: held / slots for name, slots in reserved.items()}


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
    util = decode_utilization(reqs, res, block)
    schemes: dict[str, dict[str, Any]] = {}
    for name, slots in res.items():
        schemes[name] = {
            "reserved_slots": sum(slots),
            "utilization": round(util[name], 4),
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
    t = ctx.tr
    pct = {k: f"{100 * v['utilization']:.1f}%" for k, v in schemes.items()}
    lines = [
        title_line(
            ctx,
            "PagedAttention: KV cache in fixed-size blocks",
            "PagedAttention: KV cache σε μπλοκ σταθερού μεγέθους",
            False,
        ),
        t(
            f"{n} requests (mean prompt {metrics['mean_prompt']}, output "
            f"{metrics['mean_output']} tokens). KV per token: OPT-13B "
            f"{OPT13B_KV_PER_TOKEN // 1024} KiB, Llama-3-8B {LLAMA3_8B_KV_PER_TOKEN // 1024} KiB.",
            f"{n} αιτήματα (μέσο prompt {metrics['mean_prompt']}, έξοδος "
            f"{metrics['mean_output']} tokens). KV ανά token: OPT-13B "
            f"{OPT13B_KV_PER_TOKEN // 1024} KiB, Llama-3-8B {LLAMA3_8B_KV_PER_TOKEN // 1024} KiB.",
        ),
        t(
            "Share of reserved KV slots holding tokens, averaged over decoding:",
            "Ποσοστό των δεσμευμένων θέσεων KV με tokens, κατά μέσο όρο στην αποκωδικοποίηση:",
        ),
        f"- max-len {MAX_LEN}: *{pct['max']}* · pow2: *{pct['pow2']}* · "
        f"exact: *{pct['exact']}* · paged ({block}): *{pct['paged']}*",
        t(
            "(The paper measured 20.4% / 26.8% / 38.2% for Orca max / pow2 / oracle and 96.3% "
            "for vLLM, external fragmentation included.)",
            "(Η δημοσίευση μέτρησε 20,4% / 26,8% / 38,2% για Orca max / pow2 / oracle και "
            "96,3% για το vLLM, μαζί με τον εξωτερικό κατακερματισμό.)",
        ),
        t(
            f"A 12 GiB KV budget is {budget_slots:,} slots of OPT-13B: "
            f"{metrics['max_len_sequences_in_budget']} sequences at {MAX_LEN} each; paged fits "
            f"{schemes['paged']['fit_in_budget']} of these requests. Paging wastes only the "
            f"last block of each sequence ({last_block_waste} slots in all).",
            f"Ένα budget 12 GiB για KV είναι {budget_slots:,} θέσεις για το OPT-13B: "
            f"{metrics['max_len_sequences_in_budget']} ακολουθίες των {MAX_LEN}· με σελίδες "
            f"χωράνε {schemes['paged']['fit_in_budget']} από αυτά τα αιτήματα. Σπαταλιέται μόνο "
            f"το τελευταίο μπλοκ κάθε ακολουθίας ({last_block_waste} θέσεις συνολικά).",
        ),
    ]
    if check is not None:
        lines.append(
            t(
                f"Attention check on {check['device']}: paged (gather through shuffled block "
                f"tables) vs contiguous, {check['sequences']} sequences: "
                f"{'equal' if check['match'] else 'DIFFERENT'} "
                f"(max |Δ| {check['max_abs_diff']:.1e}); "
                f"pool {check['pool_bytes'] / 1024:.0f} KiB vs max-length tensors "
                f"{check['contiguous_max_len_bytes'] / 1024:.0f} KiB.",
                f"Έλεγχος attention σε {check['device']}: paged (gather μέσω ανακατεμένων πινάκων "
                f"μπλοκ) έναντι συνεχόμενης, {check['sequences']} ακολουθίες: "
                f"{'ίδιο αποτέλεσμα' if check['match'] else 'ΔΙΑΦΟΡΕΤΙΚΟ'} (max |Δ| "
                f"{check['max_abs_diff']:.1e})· pool {check['pool_bytes'] / 1024:.0f} KiB έναντι "
                f"{check['contiguous_max_len_bytes'] / 1024:.0f} KiB για μέγιστο μήκος.",
            )
        )
    else:
        lines.append(
            t(
                "Attention check: n/a (needs torch: pip install 'quizbot[gpu]').",
                "Έλεγχος attention: n/a (χρειάζεται torch: pip install 'quizbot[gpu]').",
            )
        )

    fig, (ax,) = _plot.figure(8.0, 3.4)
    names = ["max", "pow2", "exact", "paged"]
    labels = [f"max-len {MAX_LEN}", "pow2", "exact", f"paged ({block})"]
    total_used = sum(used)
    used_k = [total_used / 1000] * 4
    unused = [(sum(res[k]) - total_used) / 1000 if k != "paged" else 0 for k in names]
    last = [0, 0, 0, last_block_waste / 1000]
    ax.bar(labels, used_k, color=_plot.ALLOCATED, label=t("tokens", "tokens"))
    ax.bar(
        labels,
        unused,
        bottom=used_k,
        color=_plot.FREE,
        label=t("reserved, unused", "δεσμευμένο, αχρησιμοποίητο"),
    )
    ax.bar(
        labels,
        last,
        bottom=used_k,
        color=_plot.ACCENT,
        label=t("last-block waste", "σπατάλη τελευταίου μπλοκ"),
    )
    for i, k in enumerate(names):
        ax.annotate(pct[k], (i, sum(res[k]) / 1000), ha="center", va="bottom", fontsize=8)
    ax.set_ylabel(t("thousand KV slots", "χιλιάδες θέσεις KV"))
    ax.set_title(
        t(
            f"KV slots reserved for {n} requests at completion (% = utilization over decoding)",
            f"Θέσεις KV για {n} αιτήματα στο τέλος (% = αξιοποίηση στην αποκωδικοποίηση)",
        ),
        fontsize=10,
    )
    ax.legend(fontsize=7)
    device = ctx.device_line() if check is not None else "arithmetic, no GPU (torch not installed)"
    return DemoOutput("\n".join(lines), metrics, _plot.to_png(fig), device, False)


DEMO = Demo(
    id="paged-attention",
    title="vLLM PagedAttention: fixed-size KV blocks",
    title_el="PagedAttention του vLLM: μπλοκ KV σταθερού μεγέθους",
    kind=DemoKind.MIXED,
    run=run,
    params=(
        Param("requests", int, 8, 256, 64, "number of requests"),
        Param("block_size", int, 1, 128, 16, "tokens per KV block (vLLM default 16)"),
        # Seed 177 gives means of 161.0 / 340.2 tokens, ShareGPT's 161.3 / 338.0.
        Param("seed", int, 0, 1_000_000, 177, "seed of the request lengths"),
    ),
)
