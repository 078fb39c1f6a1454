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
        cpu_note=(
            "the KV figures are arithmetic; the attention check ran on the CPU",
            "τα νούμερα του KV είναι υπολογισμός· ο έλεγχος attention έτρεξε στη CPU",
        ),
    )
    lines = [
        ctx.title(
            "PagedAttention: KV cache in fixed-size blocks",
            "PagedAttention: KV cache σε μπλοκ σταθερού μεγέθους",
            label,
        ),
        *_report(ctx, metrics, check),
    ]
    fig, (ax,) = _plot.figure(8.0, 3.8)
    _slots_plot(ctx, ax, metrics)
    return ctx.output(lines, metrics, fig, label)


def _report(ctx: RunContext, m: dict[str, Any], check: dict[str, Any] | None) -> list[str]:
    t = ctx.tr
    n, block, schemes = m["requests"], m["block_size"], m["schemes"]
    pct = {k: ctx.pct(v["utilization"]) for k, v in schemes.items()}
    lines = [
        t(
            f"{n} requests (mean prompt {ctx.num(m['mean_prompt'], 1)}, output "
            f"{ctx.num(m['mean_output'], 1)} tokens). KV per token: OPT-13B "
            f"{ctx.size(OPT13B_KV_PER_TOKEN)}, Llama-3-8B {ctx.size(LLAMA3_8B_KV_PER_TOKEN)}.",
            f"{n} αιτήματα (μέσο prompt {ctx.num(m['mean_prompt'], 1)}, έξοδος "
            f"{ctx.num(m['mean_output'], 1)} tokens). KV ανά token: OPT-13B "
            f"{ctx.size(OPT13B_KV_PER_TOKEN)}, Llama-3-8B {ctx.size(LLAMA3_8B_KV_PER_TOKEN)}.",
        ),
        t(
            "Share of reserved KV slots holding tokens, averaged over decoding:",
            "Ποσοστό των δεσμευμένων θέσεων KV με tokens, κατά μέσο όρο στην αποκωδικοποίηση:",
        ),
        f"- max-len {MAX_LEN}: *{pct['max']}* · pow2: *{pct['pow2']}* · "
        f"exact: *{pct['exact']}* · paged ({block}): *{pct['paged']}*",
        t(
            "These figures count only slots reserved per sequence: they leave out external "
            "fragmentation. (The paper measured 20.4% / 26.8% / 38.2% for Orca max / pow2 / "
            "oracle and 96.3% for vLLM, external fragmentation included.)",
            "Τα νούμερα μετρούν μόνο τις θέσεις που δεσμεύει κάθε ακολουθία: αφήνουν έξω τον "
            "εξωτερικό κατακερματισμό. (Η δημοσίευση μέτρησε 20,4% / 26,8% / 38,2% για Orca "
            "max / pow2 / oracle και 96,3% για το vLLM, μαζί με τον εξωτερικό κατακερματισμό.)",
        ),
        t(
            f"A 12 GiB KV budget is {ctx.num(m['budget_slots'])} slots of OPT-13B: "
            f"{m['max_len_sequences_in_budget']} sequences at {MAX_LEN} each; paged fits "
            f"{schemes['paged']['fit_in_budget']} of these requests. Paging wastes only the "
            f"last block of each sequence ({ctx.num(m['paged_last_block_waste_slots'])} slots "
            "in all).",
            f"Ένα budget 12 GiB για KV είναι {ctx.num(m['budget_slots'])} θέσεις για το "
            f"OPT-13B: {m['max_len_sequences_in_budget']} ακολουθίες των {MAX_LEN}· με σελίδες "
            f"χωράνε {schemes['paged']['fit_in_budget']} από αυτά τα αιτήματα. Σπαταλιέται μόνο "
            f"το τελευταίο μπλοκ κάθε ακολουθίας ({ctx.num(m['paged_last_block_waste_slots'])} "
            "θέσεις συνολικά).",
        ),
    ]
    if check is None:
        return lines
    same = check["match"]
    return [
        *lines,
        t(
            f"Attention check on {check['device']}: paged (gather through shuffled block "
            f"tables) vs contiguous, {check['sequences']} sequences: "
            f"{'equal' if same else 'DIFFERENT'} (max |Δ| `{check['max_abs_diff']:.1e}`); "
            f"pool {ctx.size(check['pool_bytes'])} vs max-length tensors "
            f"{ctx.size(check['contiguous_max_len_bytes'])}.",
            f"Έλεγχος attention σε {check['device']}: paged (gather μέσω ανακατεμένων πινάκων "
            f"μπλοκ) έναντι συνεχόμενης, {check['sequences']} ακολουθίες: "
            f"{'ίδιο αποτέλεσμα' if same else 'ΔΙΑΦΟΡΕΤΙΚΟ'} (max |Δ| "
            f"`{check['max_abs_diff']:.1e}`)· pool {ctx.size(check['pool_bytes'])} έναντι "
            f"{ctx.size(check['contiguous_max_len_bytes'])} για μέγιστο μήκος.",
        ),
    ]


def _slots_plot(ctx: RunContext, ax: Any, m: dict[str, Any]) -> None:
    """Time-averaged KV slots of the batch decoding together, against the budget."""
    t = ctx.tr
    schemes, block, budget = m["schemes"], m["block_size"], m["budget_slots"]
    names = ["max", "pow2", "exact", "paged"]
    labels = [f"max-len {MAX_LEN}", "pow2", "exact", f"paged ({block})"]
    held = m["time_avg_held_slots"] / 1000
    reserved = [schemes[k]["time_avg_reserved_slots"] / 1000 for k in names]
    ax.bar(labels, [held] * 4, color=_plot.ALLOCATED, label=t("tokens held", "tokens"))
    ax.bar(
        labels,
        [r - held for r in reserved],
        bottom=[held] * 4,
        color=_plot.FREE,
        label=t("reserved, empty", "δεσμευμένες, κενές"),
    )
    for i, k in enumerate(names):
        _plot.bar_total(ax, i, reserved[i], ctx.pct(schemes[k]["utilization"]))
    _plot.mark_level(
        ax,
        budget / 1000,
        t(
            f"12 GiB budget (OPT-13B): {ctx.num(budget)} slots",
            f"budget 12 GiB (OPT-13B): {ctx.num(budget)} θέσεις",
        ),
    )
    ax.set_ylabel(t("KV slots (thousands)", "θέσεις KV (χιλιάδες)"))
    _plot.number_ticks(ax, ctx.locale)
    ax.margins(y=0.12)
    ax.set_title(
        t(
            f"Paged blocks: {ctx.pct(schemes['paged']['utilization'])} of reserved KV slots hold "
            f"tokens; max-len: {ctx.pct(schemes['max']['utilization'])}",
            f"Μπλοκ (paged): το {ctx.pct(schemes['paged']['utilization'])} των δεσμευμένων θέσεων "
            f"KV έχει tokens· max-len: {ctx.pct(schemes['max']['utilization'])}",
        ),
    )
    ax.legend(loc="upper right")
    ax.text(
        0.99,
        0.70,
        t(
            f"{m['requests']} requests decoding together,\naveraged over {m['decode_steps']} "
            "steps; % = tokens / reserved;\nexternal fragmentation not included",
            f"{m['requests']} αιτήματα σε αποκωδικοποίηση μαζί,\nμέσος όρος {m['decode_steps']} "
            "βημάτων· % = tokens / δεσμευμένες·\nχωρίς τον εξωτερικό κατακερματισμό",
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
