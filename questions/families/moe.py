"""Family `moe-expert-parallel`: memory of a mixture-of-experts layer under expert
parallelism.

Each GPU routes its own T = b × s tokens to k of the E experts. With a capacity factor,
every expert takes at most C = ceil(T × k / E × capacity factor) of them (Megatron-core
``get_capacity(num_tokens * topk, num_experts, capacity_factor)``; Switch Transformer
eq. 3 for k = 1), and with drop-and-pad (``--moe-pad-expert-input-to-capacity``) exactly
C rows per expert: the tensor a GPU sends in the all-to-all dispatch is E × C × h values,
and it receives as many for its own E / EP experts. Expert weights: each GPU keeps its
E / EP experts' SwiGLU MLPs (gate, up and down: 3 × h × f each) in every MoE layer.
"""

from __future__ import annotations

import math
from itertools import product
from typing import Any, Final, NamedTuple

from bot.formats import Number
from bot.i18n import Localized, Text
from questions.families.assemble import ANSWER
from questions.families.misconceptions import compounds
from questions.families.model import Candidate, Draft, Style, formula_family, make_draft
from questions.families.models import LARGEST_GPU_BYTES
from questions.families.sizes import MIB
from questions.families.space import Space, grid


class Moe(NamedTuple):
    name: str
    moe_layers: int
    hidden: int
    expert_ffn: int
    experts: int
    top_k: int
    ep: tuple[int, ...]  # expert-parallel sizes it is trained with


# config.json of each model (num_local_experts / n_routed_experts, num_experts_per_tok,
# moe_intermediate_size or intermediate_size); routed experts only
MODELS: Final = (
    Moe("Mixtral-8x7B", 32, 4096, 14336, 8, 2, (2, 4, 8)),
    Moe("Mixtral-8x22B", 56, 6144, 16384, 8, 2, (4, 8)),
    Moe("DBRX", 40, 6144, 10752, 16, 4, (4, 8, 16)),
    Moe("OLMoE-1B-7B", 16, 2048, 1024, 64, 8, (4, 8, 16)),
    Moe("Qwen1.5-MoE-A2.7B", 24, 2048, 1408, 60, 4, (2, 4)),
    Moe("Qwen3-30B-A3B", 48, 2048, 768, 128, 8, (8, 16, 32)),
    Moe("Qwen3-235B-A22B", 94, 4096, 1536, 128, 8, (16, 32, 64)),
    Moe("DeepSeek-V3", 58, 7168, 2048, 256, 8, (32, 64)),
)
ASKS: Final = ("capacity", "dispatch", "weights")
SEQUENCES: Final = (2048, 4096, 8192)
MICRO_BATCHES: Final = (1, 2, 4, 8)
FACTORS: Final = (1.0, 1.25, 1.5, 2.0)


def _model(name: str) -> Moe:
    return next(m for m in MODELS if m.name == name)


def capacity(tokens: int, experts: int, top_k: int, factor: float) -> int:
    return math.ceil(tokens * top_k / experts * factor)


def answer_of(i: dict[str, Any]) -> int:
    if i["ask"] == "weights":
        local = i["experts"] // i["ep"]
        return int(local * 3 * i["hidden"] * i["expert_ffn"] * 2 * i["moe_layers"])
    c = capacity(i["batch"] * i["seq"], i["experts"], i["top_k"], i["capacity_factor"])
    if i["ask"] == "capacity":
        return c
    return int(i["experts"] * c * i["hidden"] * 2)


def _cases() -> tuple[tuple[str, str, int, int, float, int], ...]:
    out = []
    for m, ask in product(MODELS, ASKS):
        if ask == "weights":
            out += [(m.name, ask, 1, 4096, 1.0, ep) for ep in m.ep]
            continue
        for s, b, f in product(SEQUENCES, MICRO_BATCHES, FACTORS):
            ep = m.ep[(s + b) % len(m.ep)]  # the EP size does not change these figures
            out.append((m.name, ask, b, s, f, ep))
    return tuple(
        c for c in out if c[1] == "capacity" or MIB <= answer_of(_inputs(*c)) <= LARGEST_GPU_BYTES
    )


def _inputs(name: str, ask: str, b: int, s: int, f: float, ep: int) -> dict[str, Any]:
    m = _model(name)
    return {
        "kind": "moe-expert-parallel",
        "model": name,
        "ask": ask,
        "moe_layers": m.moe_layers,
        "hidden": m.hidden,
        "expert_ffn": m.expert_ffn,
        "experts": m.experts,
        "top_k": m.top_k,
        "ep": ep,
        "batch": b,
        "seq": s,
        "capacity_factor": f,
    }


SPACE = Space((grid("moe", case=_cases()),))
PROMPT_TOKENS = Text(
    "{model} ({E} experts, top-{k}, hidden size {h}) is trained with expert parallelism over "
    "{ep} GPUs; each GPU routes micro-batches of {b} × {s} tokens with capacity factor {f}. "
    "{question}"
)
PROMPT_WEIGHTS = Text(
    "{model} has {E} routed experts per MoE layer ({L} layers), each a SwiGLU MLP of hidden "
    "size {h} and expert size {n}. With expert parallelism over {ep} GPUs, how much do the "
    "routed experts' bf16 weights take per GPU?"
)


def _question(ask: str) -> Localized:
    if ask == "capacity":
        return Text("How many tokens can each expert take per micro-batch?")
    return Text(
        "With drop-and-pad, how big is the bf16 tensor a GPU sends in the all-to-all dispatch?"
    )


def _token_candidates(i: dict[str, Any], answer: int) -> list[Candidate]:
    T, E, k, f, ep = i["batch"] * i["seq"], i["experts"], i["top_k"], i["capacity_factor"], i["ep"]
    c = capacity(T, E, k, f)
    scale = 1 if i["ask"] == "capacity" else E * i["hidden"] * 2
    models: list[tuple[str, int, Localized, Localized, str]] = [
        (
            "top-k-forgotten",
            capacity(T, E, 1, f),
            Text("routes each token to one expert; it goes to {k}.", k=k),
            Text("top-1"),
            "k",
        ),
        (
            "capacity-factor-forgotten",
            capacity(T, E, k, 1.0),
            Text("leaves out the capacity factor {f}.", f=Number(f, 2)),
            Text("no capacity factor"),
            "factor",
        ),
        (
            "tokens-of-all-gpus",
            capacity(T * ep, E, k, f),
            Text("routes the tokens of all {ep} GPUs; each routes its own.", ep=ep),
            Text("all GPUs' tokens"),
            "tokens",
        ),
        (
            "local-experts-only",
            capacity(T, E // ep, k, f),
            Text(
                "routes to the {n} local experts only; routing spans all {E}.",
                n=E // ep,
                E=E,
            ),
            Text("local experts only"),
            "experts",
        ),
        (
            "one-sequence",
            capacity(i["seq"], E, k, f),
            Text("one sequence; the micro-batch holds {b}.", b=i["batch"]),
            Text("one sequence"),
            "tokens",
        ),
    ]
    out = [
        Candidate(name, cap * scale, why, label, factor) for name, cap, why, label, factor in models
    ]
    if i["ask"] == "capacity":
        out.append(
            Candidate(
                "capacity-rounded-down",
                math.floor(T * k / E * f),
                Text("rounds down; the capacity is rounded up."),
            )
        )
        out.append(
            Candidate(
                "capacity-factor-divides",
                math.ceil(T * k / E / f),
                Text("divides by the capacity factor; it multiplies."),
            )
        )
    else:
        h = i["hidden"]
        out += [
            Candidate(
                "dropless-rows",
                T * k * h * 2,
                Text("T × k rows, as without padding; drop-and-pad sends C rows per expert."),
                Text("unpadded rows"),
                "+rows",
            ),
            Candidate(
                "fp32-hidden-states",
                answer * 2,
                Text("4-byte values; the hidden states are bf16."),
                Text("4-byte values"),
                "bytes",
            ),
            Candidate(
                "one-expert-only",
                c * h * 2,
                Text("one expert's rows; a GPU sends C rows to every expert."),
                Text("one expert"),
                "experts",
            ),
            Candidate(
                "local-experts-rows",
                E // ep * c * h * 2,
                Text("rows for the {n} local experts; a GPU sends to all {E}.", n=E // ep, E=E),
                Text("local experts' rows"),
                "experts2",
            ),
            Candidate(
                "tokens-not-capacity",
                T * h * 2,
                Text("each token once; it goes to {k} experts, padded to C.", k=k),
                Text("tokens once"),
                "+rows2",
            ),
        ]
    return out + compounds(answer, out)


def _weight_candidates(i: dict[str, Any], answer: int) -> list[Candidate]:
    E, ep, k, L = i["experts"], i["ep"], i["top_k"], i["moe_layers"]
    per_expert = 3 * i["hidden"] * i["expert_ffn"] * 2
    out = [
        Candidate(
            "all-experts-per-gpu",
            answer * ep,
            Text("all {E} experts; each GPU keeps {n}.", E=E, n=E // ep),
            Text("all experts"),
            "experts",
        ),
        Candidate(
            "active-experts-only",
            k * per_expert * L,
            Text("the {k} experts a token uses; every expert's weights are stored.", k=k),
            Text("active experts only"),
            "experts",
        ),
        Candidate(
            "two-matrices",
            answer * 2 // 3,
            Text("two matrices per expert; a SwiGLU expert has gate, up and down."),
            Text("two matrices"),
            "matrices",
        ),
        Candidate(
            "fp32-weights",
            answer * 2,
            Text("4 bytes per weight; these are bf16."),
            Text("4-byte weights"),
            "bytes",
        ),
        Candidate(
            "one-layer-only",
            answer // L,
            Text("one layer; every MoE layer has its experts."),
            Text("one layer"),
            "layers",
        ),
    ]
    return out + compounds(answer, out)


def build(variant: str, params: dict[str, Any]) -> Draft:
    name, ask, b, s, f, ep = params["case"]
    i = _inputs(name, ask, b, s, f, ep)
    m = _model(name)
    answer = answer_of(i)
    T = b * s
    c = capacity(T, m.experts, m.top_k, f)
    if ask == "weights":
        steps: tuple[Localized, ...] = (
            Text(
                "Each GPU keeps {E} / {ep} = {n} experts per layer, each 3 × {h} × {ff} bf16 "
                "weights.",
                E=m.experts,
                ep=ep,
                n=m.experts // ep,
                h=m.hidden,
                ff=m.expert_ffn,
            ),
            Text("Over {L} MoE layers: {answer}.", L=m.moe_layers, answer=ANSWER),
        )
        prompt = PROMPT_WEIGHTS.fill(
            model=name,
            E=m.experts,
            L=m.moe_layers,
            h=m.hidden,
            n=m.expert_ffn,
            ep=ep,
        )
        candidates = _weight_candidates(i, answer)
        style = Style.ROUNDED_SIZE
    else:
        steps = (
            Text(
                "C = ceil(T × k / E × factor) = ceil({T} × {k} / {E} × {f}) = {c} tokens per "
                "expert.",
                T=Number(T),
                k=m.top_k,
                E=m.experts,
                f=Number(f, 2),
                c=Number(c),
            ),
            Text("So each expert takes {answer}.", answer=ANSWER)
            if ask == "capacity"
            else Text(
                "Padded to C, a GPU sends C rows to each of the {E} experts: {E} × {c} × {h} × "
                "2 bytes = {answer}.",
                E=m.experts,
                c=Number(c),
                h=m.hidden,
                answer=ANSWER,
            ),
        )
        prompt = PROMPT_TOKENS.fill(
            model=name,
            E=m.experts,
            k=m.top_k,
            h=m.hidden,
            ep=ep,
            b=b,
            s=Number(s),
            f=Number(f, 2),
            question=_question(ask),
        )
        candidates = _token_candidates(i, answer)
        style = Style.COUNT if ask == "capacity" else Style.ROUNDED_SIZE
    return make_draft(
        "distributed-sharding",
        3,
        i,
        prompt,
        steps,
        answer,
        candidates,
        (
            "https://arxiv.org/abs/2101.03961",
            "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/core/transformer/moe/moe_utils.py",
            "https://docs.nvidia.com/megatron-core/developer-guide/latest/api-guide/moe.html",
        ),
        style=style,
    )


FAMILY = formula_family(
    id="moe-expert-parallel",
    topic="distributed-sharding",
    difficulty=(3, 3),
    description=(
        "Mixture-of-experts under expert parallelism: expert capacity from top-k and the "
        "capacity factor, the padded all-to-all dispatch tensor, expert weights per GPU"
    ),
    space=SPACE,
    build=build,
    rank_weights=(1.1, 0.8, 1.0, 1.1),
)
