"""Family `kv-chunked-prefill`: KV-cache blocks under vLLM's chunked prefill.

vLLM's V1 scheduler spends a budget of ``max_num_batched_tokens`` per step: running
requests first (a decoding request takes 1 token), then waiting ones, each prefilling
``min(its remaining prompt, the budget left)`` tokens (``Scheduler.schedule``). KV memory
is allocated in blocks of 16 tokens per request (``allocate_slots``: ``cdiv(tokens,
block_size)`` blocks), each block holding every layer's keys and values:
2 × 16 × KV heads × head dim × bytes per value × layers (``page_size_bytes``). The
prompts here share no prefix with cached ones.
"""

from __future__ import annotations

from itertools import product
from typing import Any, Final

from bot.formats import Number
from bot.i18n import Localized, Text
from questions.families.assemble import ANSWER
from questions.families.misconceptions import compounds
from questions.families.model import Candidate, Draft, Style, formula_family, make_draft
from questions.families.models import DECODERS, LARGEST_GPU_BYTES, decoder
from questions.families.space import Space, grid

BLOCK: Final = 16  # vLLM's default block size (CacheConfig)
# (the steps to prefill and the block count were tried too: small counts whose every
# misconception lands one step away, so the form gave them away)
ASKS: Final = ("first-chunk", "bytes-after-first", "bytes-at-end")
BUDGETS: Final = (2048, 4096, 8192, 16384)  # max_num_batched_tokens
DECODES: Final = (30, 61, 125, 250, 500)  # requests decoding in the same steps
PROMPTS: Final = (5000, 12345, 30001, 60000, 100003)
MODELS: Final = tuple(
    d
    for d in DECODERS
    if d.name in ("Llama-3.1-8B", "Qwen2.5-7B", "Mistral-Nemo-12B", "Llama-3.1-70B", "Qwen2.5-72B")
)


def per_token_bytes(layers: int, kv_heads: int, head_dim: int, dtype_bytes: int) -> int:
    return 2 * layers * kv_heads * head_dim * dtype_bytes


def answer_of(i: dict[str, Any]) -> int:
    chunk = int(min(i["prompt"], i["budget"] - i["decodes"]))
    per_block = BLOCK * per_token_bytes(i["layers"], i["kv_heads"], i["head_dim"], 2)
    if i["ask"] == "first-chunk":
        return chunk
    if i["ask"] == "bytes-after-first":
        return -(-chunk // BLOCK) * per_block
    return -(-int(i["prompt"]) // BLOCK) * per_block


def _inputs(name: str, ask: str, budget: int, decodes: int, prompt: int) -> dict[str, Any]:
    d = decoder(name)
    return {
        "kind": "kv-chunked-prefill",
        "model": name,
        "ask": ask,
        "layers": d.layers,
        "kv_heads": d.kv_heads,
        "q_heads": d.q_heads,
        "head_dim": d.head_dim,
        "budget": budget,
        "decodes": decodes,
        "prompt": prompt,
    }


def _cases() -> tuple[tuple[str, str, int, int, int], ...]:
    out = []
    for d, ask, budget, decodes, prompt in product(MODELS, ASKS, BUDGETS, DECODES, PROMPTS):
        if prompt > d.context or decodes >= budget // 3 or prompt <= budget:
            continue  # a long prompt, a budget mostly left for it
        if ask == "bytes-at-end" and decodes != DECODES[1]:
            continue  # the final size depends on the prompt alone
        i = _inputs(d.name, ask, budget, decodes, prompt)
        if ask.startswith("bytes") and answer_of(i) > LARGEST_GPU_BYTES:
            continue
        out.append((d.name, ask, budget, decodes, prompt))
    return tuple(out)


SPACE = Space((grid("serve", case=_cases()),))
PROMPT = Text(
    "vLLM serves {model} (bf16 KV cache, blocks of 16 tokens) with chunked prefill and "
    "max_num_batched_tokens={M}. {d} requests are decoding when a {P}-token prompt arrives. "
    "{question}"
)


def _question(ask: str) -> Localized:
    return {
        "first-chunk": Text("How many of its tokens does the first step prefill?"),
        "bytes-after-first": Text("How much KV-cache memory does it hold after the first step?"),
        "bytes-at-end": Text("How much KV-cache memory does it hold once its prompt is prefilled?"),
    }[ask]


def _count_candidates(i: dict[str, Any], answer: int) -> list[Candidate]:
    M, D, P = i["budget"], i["decodes"], i["prompt"]
    out = [
        Candidate(
            "decodes-ignored",
            (min(P, M)),
            Text("the whole budget for the prompt; each decode takes 1 token."),
        ),
        Candidate(
            "decodes-take-a-block-each",
            (max(1, M - D * BLOCK)),
            Text("a 16-token block per decode; a decode takes 1 token."),
        ),
        Candidate(
            "budget-per-request",
            (M),
            Text("gives each request its own budget; the step's budget is shared."),
        ),
        Candidate(
            "decodes-counted-twice",
            (max(1, M - 2 * D)),
            Text("counts each decode twice; it takes one token."),
        ),
    ]
    out += [
        Candidate(
            "half-the-budget",
            M // 2,
            Text("half the budget for the prompt; decodes take 1 token each."),
        ),
        Candidate(
            "whole-prompt",
            P,
            Text("the whole prompt; chunked prefill caps a step at the budget."),
        ),
        Candidate(
            "budget-plus-decodes",
            M + D,
            Text("adds the decodes to the budget; they take from it."),
        ),
    ]
    return out


def _byte_candidates(i: dict[str, Any], answer: int) -> list[Candidate]:
    M, D, P = i["budget"], i["decodes"], i["prompt"]
    chunk = min(P, M - D) if i["ask"] == "bytes-after-first" else P
    per_token = per_token_bytes(i["layers"], i["kv_heads"], i["head_dim"], 2)
    out = [
        Candidate(
            "tokens-not-blocks",
            chunk * per_token,
            Text("counts the tokens exactly; whole 16-token blocks are allocated."),
        ),
        Candidate(
            "keys-only",
            answer // 2,
            Text("keys only; values are cached too."),
            Text("keys only"),
            "kv",
        ),
        Candidate(
            "one-layer-only",
            answer // i["layers"],
            Text("one layer; a block holds every layer's keys and values."),
            Text("one layer"),
            "layers",
        ),
        Candidate(
            "fp32-cache",
            answer * 2,
            Text("4 bytes per value; the cache is bf16."),
            Text("4-byte values"),
            "bytes",
        ),
        Candidate(
            "query-heads-cached",
            answer * i["q_heads"] // i["kv_heads"],
            Text("uses the query heads; only the KV heads are cached."),
            Text("query heads"),
            "heads",
        ),
    ]
    if i["ask"] == "bytes-after-first":
        out += [
            Candidate(
                "whole-prompt-allocated",
                -(-P // BLOCK) * BLOCK * per_token,
                Text("the whole prompt's blocks; blocks follow the computed tokens."),
            ),
            Candidate(
                "decodes-ignored",
                -(-min(P, M) // BLOCK) * BLOCK * per_token,
                Text("the whole budget for the prompt; each decode takes 1 token."),
            ),
            Candidate(
                "budget-counted",
                M * per_token,
                Text("counts the whole budget; the decodes use part of it."),
            ),
            Candidate(
                "decodes-take-a-block-each",
                -(-max(1, M - D * BLOCK) // BLOCK) * BLOCK * per_token,
                Text("a 16-token block per decode; a decode takes 1 token."),
            ),
            Candidate(
                "decodes-counted-twice",
                -(-max(1, M - 2 * D) // BLOCK) * BLOCK * per_token,
                Text("counts each decode twice; it takes one token."),
            ),
        ]
    else:
        out += [
            Candidate(
                "first-chunk-only",
                -(-min(P, M - D) // BLOCK) * BLOCK * per_token,
                Text("the first chunk only; the later steps add theirs."),
            ),
        ]
    return out + compounds(answer, out)


def build(variant: str, params: dict[str, Any]) -> Draft:
    name, ask, budget, decodes, prompt_tokens = params["case"]
    i = _inputs(name, ask, budget, decodes, prompt_tokens)
    d = decoder(name)
    answer = answer_of(i)
    chunk = min(prompt_tokens, budget - decodes)
    steps: list[Localized] = [
        Text(
            "Running requests are scheduled first: the {d} decodes take {d} tokens of the "
            "{M}-token budget, so the prompt gets {c} in the first step.",
            d=decodes,
            M=Number(budget),
            c=Number(chunk),
        )
    ]
    if ask == "first-chunk":
        steps.append(Text("So the first chunk is {answer} tokens.", answer=ANSWER))
    else:
        block_shape = {"kv": d.kv_heads, "hd": d.head_dim, "L": d.layers}
        if ask == "bytes-after-first":
            steps.append(
                Text(
                    "{c} tokens fill {n} blocks of 16 (the last one partly); a block is "
                    "2 × 16 × {kv} × {hd} × 2 bytes × {L} layers.",
                    c=Number(chunk),
                    n=Number(-(-chunk // BLOCK)),
                    **block_shape,
                )
            )
        else:
            steps[0] = Text(
                "Whatever the chunks, the prefilled prompt holds cdiv({P}, 16) = {n} blocks; a "
                "block is 2 × 16 × {kv} × {hd} × 2 bytes × {L} layers.",
                P=Number(prompt_tokens),
                n=Number(-(-prompt_tokens // BLOCK)),
                **block_shape,
            )
        steps.append(Text("So it holds {answer}.", answer=ANSWER))
    prompt = PROMPT.fill(
        model=name,
        M=budget,
        d=decodes,
        P=Number(prompt_tokens),
        question=_question(ask),
    )
    counts = ask == "first-chunk"
    return make_draft(
        "kv-cache",
        3 if ask != "first-chunk" else 2,
        i,
        prompt,
        steps,
        answer,
        (_count_candidates if counts else _byte_candidates)(i, answer),
        (
            "https://docs.vllm.ai/en/latest/configuration/optimization.html",
            "https://github.com/vllm-project/vllm/blob/main/vllm/v1/core/sched/scheduler.py",
            "https://arxiv.org/abs/2309.06180",
        ),
        style=Style.COUNT if counts else Style.ROUNDED_SIZE,
    )


FAMILY = formula_family(
    id="kv-chunked-prefill",
    topic="kv-cache",
    difficulty=(2, 3),
    description=(
        "vLLM chunked prefill under max_num_batched_tokens: the first chunk beside running "
        "decodes, the KV bytes a long prompt holds after it and once prefilled"
    ),
    space=SPACE,
    build=build,
    rank_weights=(1.0, 0.9, 1.05, 1.0),  # measured: evens out the ranks
)
