"""Family `kv-cache-size`: KV-cache bytes per GPU for a batch of sequences of a published
decoder served with tensor parallelism.

bytes = 2 (key and value) × layers × KV heads per GPU × head dim × bytes per value × tokens
× sequences (PagedAttention paper, section 2; with grouped-query attention only the KV
heads count). With tensor parallelism over t GPUs each GPU keeps max(1, KV heads / t)
heads: vLLM replicates a KV head when there are fewer than GPUs
(``ModelConfig.get_num_kv_heads``).
"""

from __future__ import annotations

from itertools import product
from typing import Any, Final

from bot.formats import Number
from bot.i18n import Localized, Text
from questions.families.assemble import ANSWER
from questions.families.misconceptions import compounds
from questions.families.model import Candidate, Draft, formula_family, make_draft
from questions.families.models import DECODERS, LARGEST_GPU_BYTES, Decoder, decoder
from questions.families.sizes import MIB
from questions.families.space import Space, grid

DTYPES: Final = {"bf16": 2, "fp16": 2, "fp8": 1}  # vLLM's kv_cache_dtype auto / fp8
TOKENS: Final = (2048, 4096, 8192, 16384, 32768, 131072)
BATCHES: Final = (1, 4, 8, 16, 32, 64, 128, 256)
# the tensor-parallel sizes each model is served with (weights must fit beside the cache)
TP: Final = {7: (1, 2), 15: (1, 2, 4), 40: (2, 4, 8), 80: (4, 8), 500: (8,)}
# Gemma 2 uses a 4,096-token sliding window on every other layer: beyond it those layers
# keep fewer tokens, so its questions stay within the window
WINDOW: Final = {"Gemma-2-2B": 4096, "Gemma-2-9B": 4096, "Gemma-2-27B": 4096}


def kv_heads_per_gpu(kv_heads: int, tp: int) -> int:
    return max(1, kv_heads // tp)


def kv_cache_bytes(inputs: dict[str, Any]) -> int:
    per_gpu = kv_heads_per_gpu(inputs["kv_heads"], inputs["tensor_parallel"])
    return int(
        2
        * inputs["layers"]
        * per_gpu
        * inputs["head_dim"]
        * inputs["dtype_bytes"]
        * inputs["tokens"]
        * inputs["batch"]
    )


def _tp_options(model: Decoder) -> tuple[int, ...]:
    return next(options for limit, options in TP.items() if model.params_b <= limit)


def _cases() -> tuple[tuple[str, str, int, int, int], ...]:
    """(model, dtype, tp, batch, tokens) whose cache lies between 256 MiB and the largest
    GPU (192 GB) per GPU: what an engineer sizes a deployment for."""
    out = []
    for model, dtype, batch, tokens in product(DECODERS, DTYPES, BATCHES, TOKENS):
        if tokens > min(model.context, WINDOW.get(model.name, model.context)):
            continue
        for tp in _tp_options(model):
            per_token = 2 * model.layers * kv_heads_per_gpu(model.kv_heads, tp) * model.head_dim
            total = per_token * DTYPES[dtype] * tokens * batch
            if 256 * MIB <= total <= LARGEST_GPU_BYTES:
                out.append((model.name, dtype, tp, batch, tokens))
    return tuple(out)


SPACE = Space((grid("serve", case=_cases()),))
PROMPT = Text(
    "{model} ({L} layers, {q} query heads, {kv} KV heads of dimension {d}) is served {t}, "
    "KV cache in {dtype}. How much KV-cache memory does each GPU hold for {batch}?"
)


def _batch(batch: int, tokens: int) -> Localized:
    if batch == 1:
        return Text("one sequence of {t} tokens", t=Number(tokens))
    return Text("{b} sequences of {t} tokens each", b=batch, t=Number(tokens))


def _gpus(tp: int) -> Localized:
    if tp == 1:
        return Text("on one GPU")
    return Text("with tensor parallelism over {t} GPUs", t=tp)


def _candidates(i: dict[str, Any], answer: int) -> list[Candidate]:
    tp, kv, q = i["tensor_parallel"], i["kv_heads"], i["q_heads"]
    per_gpu = kv_heads_per_gpu(kv, tp)
    out = [
        Candidate(
            "keys-only",
            answer / 2,
            Text("counts keys only; values are cached too."),
            Text("keys only"),
            "kv",
        ),
        Candidate(
            "one-layer-only",
            answer / i["layers"],
            Text("one layer; every layer caches its own keys and values."),
            Text("one layer"),
            "layers",
        ),
    ]
    if q != kv:
        out.append(
            Candidate(
                "query-heads-cached",
                answer * max(1, q // tp) / per_gpu,
                Text("uses the query heads; only the {kv} KV heads are cached.", kv=kv),
                Text("query heads"),
                "heads",
            )
        )
    wrong = 2 if i["dtype_bytes"] == 1 else 4
    out.append(
        Candidate(
            "fp8-as-two-bytes" if wrong == 2 else "fp32-cache",
            answer * wrong / i["dtype_bytes"],
            Text(
                "takes {w} bytes per value; {dtype} has {b}.",
                w=wrong,
                dtype=i["dtype"],
                b=i["dtype_bytes"],
            ),
            Text("{w}-byte values", w=wrong),
            "bytes",
        )
    )
    if i["batch"] > 1:
        out.append(
            Candidate(
                "batch-forgotten",
                answer / i["batch"],
                Text("one sequence; each of the {b} has its own cache.", b=i["batch"]),
                Text("one sequence"),
                "batch",
            )
        )
    if tp > 1:
        out.append(
            Candidate(
                "tensor-parallel-forgotten",
                answer * kv / per_gpu,
                Text("the cache of all {t} GPUs; each keeps {h} of the KV heads.", t=tp, h=per_gpu),
                Text("all GPUs"),
                "tp",
            )
        )
        if kv < tp:
            out.append(
                Candidate(
                    "replicated-head-divided",
                    answer * kv / tp,
                    Text(
                        "splits the {kv} KV heads {t} ways; a head is replicated, not cut.",
                        kv=kv,
                        t=tp,
                    ),
                    Text("heads split"),
                    "tp",
                )
            )
    if i["tokens"] < i["context"]:
        out.append(
            Candidate(
                "full-context-reserved",
                answer * i["context"] / i["tokens"],
                Text(
                    "the full {c}-token context per sequence; pages follow the tokens.",
                    c=Number(i["context"]),
                ),
                Text("the full context"),
                "tokens",
            )
        )
    return out + compounds(answer, out)


def build(variant: str, params: dict[str, Any]) -> Draft:
    name, dtype, tp, batch, tokens = params["case"]
    model = decoder(name)
    inputs: dict[str, Any] = {
        "kind": "kv-cache-size",
        "model": name,
        "layers": model.layers,
        "q_heads": model.q_heads,
        "kv_heads": model.kv_heads,
        "head_dim": model.head_dim,
        "dtype": dtype,
        "dtype_bytes": DTYPES[dtype],
        "tensor_parallel": tp,
        "batch": batch,
        "tokens": tokens,
        "context": min(model.context, WINDOW.get(name, model.context)),
    }
    answer = kv_cache_bytes(inputs)
    per_gpu = kv_heads_per_gpu(model.kv_heads, tp)
    per_token_layer = 2 * per_gpu * model.head_dim * DTYPES[dtype]
    heads = (
        Text("{kv} KV heads", kv=model.kv_heads)
        if tp == 1
        else Text("{h} of the {kv} KV heads per GPU", h=per_gpu, kv=model.kv_heads)
        if model.kv_heads >= tp
        else Text("1 KV head per GPU (replicated)")
    )
    steps = (
        Text(
            "Per token and layer a GPU keeps a key and a value for {heads}: 2 × {h} × {d} × "
            "{B} bytes = {p} bytes.",
            heads=heads,
            h=per_gpu,
            d=model.head_dim,
            B=DTYPES[dtype],
            p=Number(per_token_layer),
        ),
        Text(
            "Times {L} layers and {batch}: {v} bytes = {answer}.",
            L=model.layers,
            batch=_batch(batch, tokens),
            v=Number(answer),
            answer=ANSWER,
        ),
    )
    prompt = PROMPT.fill(
        model=name,
        L=model.layers,
        q=model.q_heads,
        kv=model.kv_heads,
        d=model.head_dim,
        t=_gpus(tp),
        dtype=dtype,
        batch=_batch(batch, tokens),
    )
    return make_draft(
        "kv-cache",
        3 if model.q_heads != model.kv_heads or tp > 1 else 2,
        inputs,
        prompt,
        steps,
        answer,
        _candidates(inputs, answer),
        (
            "https://arxiv.org/abs/2309.06180",
            "https://arxiv.org/abs/2305.13245",
            "https://github.com/vllm-project/vllm/blob/main/vllm/config/model.py",
        ),
    )


FAMILY = formula_family(
    id="kv-cache-size",
    topic="kv-cache",
    difficulty=(2, 3),
    description=(
        "KV-cache bytes per GPU of a published decoder (layers, query/KV heads, head dim) "
        "for a batch and sequence length, in bf16/fp16/fp8, under tensor parallelism"
    ),
    space=SPACE,
    build=build,
    rank_weights=(1.15, 0.9, 0.9, 1.05),  # measured: evens out the ranks
)
