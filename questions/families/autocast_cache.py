"""Family `autocast-weight-cache`: what ``torch.autocast``'s cast cache holds.

Inside an autocast region, ops on the lower-precision list (``linear``, ``matmul``, ...)
cast their fp32 inputs to the autocast dtype. A cast of a tensor that is an fp32 leaf
requiring grad, not a view (a trainable parameter) is cached and reused until the
outermost autocast region exits (``cached_cast`` in aten/src/ATen/autocast_mode.cpp;
``cache_enabled=True`` by default); every other cast is done again at each use. So by the
end of a forward pass the cache holds a bf16/fp16 copy of every trainable fp32 weight an
``nn.Linear`` (or the tied LM head) used. It holds under ``torch.no_grad()`` too (the
parameters still require grad). Embedding lookups and norms are not lower-precision ops:
they cast nothing. Frozen weights (requires_grad=False) are cast at every use, not cached;
weights already in the autocast dtype are not cast at all. LoRA adapters are fp32 over a
16-bit base (PEFT's ``cast_adapter_dtype``, on by default). The weights' own storage is
exact: each model's shapes add up to its published parameter count.
tests/questions/families/test_autocast_facts.py checks these rules on the installed
PyTorch; test_family_rules.py the parameter counts.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product
from typing import Any, Final, NamedTuple

from bot.formats import Number, Size
from bot.i18n import Localized, Text
from questions.families.assemble import ANSWER
from questions.families.misconceptions import compounds
from questions.families.model import Candidate, Draft, formula_family, make_draft
from questions.families.models import LARGEST_GPU_BYTES, decoder
from questions.families.sizes import MIB
from questions.families.space import Space, grid


class Shape(NamedTuple):
    ffn: int  # intermediate_size of the SwiGLU MLP
    tied: bool  # LM head shares the embedding matrix
    bias: bool = False  # q/k/v projections carry a bias (Qwen2)


# Llama-style models (config.json: intermediate_size, tie_word_embeddings; Qwen2's
# attention has q/k/v biases). Two RMSNorm weights per layer and a final one.
SHAPES: Final = {
    "Llama-3.2-1B": Shape(8192, True),
    "Llama-3.2-3B": Shape(8192, True),
    "Llama-2-7B": Shape(11008, False),
    "Llama-3.1-8B": Shape(14336, False),
    "Mistral-7B-v0.3": Shape(14336, False),
    "Qwen2.5-7B": Shape(18944, False, True),
    "Llama-2-13B": Shape(13824, False),
    "Mistral-Nemo-12B": Shape(14336, False),
    "Qwen2.5-14B": Shape(13824, False, True),
    "Qwen2.5-32B": Shape(27648, False, True),
    "Yi-34B": Shape(20480, False),
    "Llama-2-70B": Shape(28672, False),
    "Llama-3.1-70B": Shape(28672, False),
    "Qwen2.5-72B": Shape(29568, False, True),
}
MODES: Final = ("train", "eval", "lora")
ASKS: Final = ("cache", "weights-and-cache")
# single-GPU set-ups: fp32 weights for full fine-tuning (small models) or evaluation;
# LoRA on a base stored in the autocast dtype (bf16, or fp16 where a GPU lacks bf16) for
# the rest: a base in the other 16-bit type would be cast at every use. Full fine-tuning
# and evaluation keep to Llama and Mistral models (no biases to cast). The weights'
# own storage is asked only without LoRA: beside a 16-bit base the adapters' casts are
# under 2 % of it.
FULL: Final = ("Llama-3.2-1B", "Llama-3.2-3B", "Llama-2-7B", "Llama-3.1-8B", "Mistral-7B-v0.3")
EVAL: Final = (*FULL, "Llama-2-13B", "Mistral-Nemo-12B")
RANKS: Final = (4, 8, 16, 32, 64, 128, 256)
TARGETS: Final = ("qv", "attention", "all")  # "qv": PEFT's default for these models
DTYPES: Final = ("bf16", "fp16")


def linear_params(name: str) -> dict[str, int]:
    """nn.Linear weights per kind of layer, summed over the model (biases not included)."""
    d = decoder(name)
    q, kv = d.q_heads * d.head_dim, d.kv_heads * d.head_dim
    ffn = SHAPES[name].ffn
    return {
        "q": d.layers * d.hidden * q,
        "k": d.layers * d.hidden * kv,
        "v": d.layers * d.hidden * kv,
        "o": d.layers * q * d.hidden,
        "mlp": d.layers * 3 * d.hidden * ffn,
        "head": d.vocab * d.hidden,
    }


def total_params(name: str) -> int:
    """Every parameter: linear weights, q/k/v biases, norms, the embedding (once if tied)."""
    d = decoder(name)
    shape = SHAPES[name]
    q, kv = d.q_heads * d.head_dim, d.kv_heads * d.head_dim
    biases = d.layers * (q + 2 * kv) if shape.bias else 0
    norms = d.hidden * (2 * d.layers + 1)
    embedding = 0 if shape.tied else d.vocab * d.hidden  # a tied head is the embedding
    return sum(linear_params(name).values()) + biases + norms + embedding


def adapted_shapes(name: str, targets: str) -> list[tuple[int, int]]:
    """(in, out) of each projection LoRA adapts in one layer."""
    d = decoder(name)
    q, kv = d.q_heads * d.head_dim, d.kv_heads * d.head_dim
    if targets == "qv":
        return [(d.hidden, q), (d.hidden, kv)]
    shapes = [(d.hidden, q), (d.hidden, kv), (d.hidden, kv), (q, d.hidden)]
    if targets == "all":
        ffn = SHAPES[name].ffn
        shapes += [(d.hidden, ffn), (d.hidden, ffn), (ffn, d.hidden)]
    return shapes


def lora_params(name: str, rank: int, targets: str) -> int:
    """LoRA A (r × in) and B (out × r) of every adapted projection."""
    layers = decoder(name).layers
    return layers * sum(rank * (n_in + n_out) for n_in, n_out in adapted_shapes(name, targets))


def storage_bytes(inputs: dict[str, Any]) -> int:
    """The fp32 weights' own storage (asked without LoRA only)."""
    return 4 * total_params(inputs["model"])


def cache_bytes(inputs: dict[str, Any]) -> int:
    if inputs["mode"] == "lora":
        return 2 * lora_params(inputs["model"], inputs["rank"], inputs["targets"])
    return 2 * sum(linear_params(inputs["model"]).values())


def answer_of(inputs: dict[str, Any]) -> int:
    cache = cache_bytes(inputs)
    return cache if inputs["ask"] == "cache" else storage_bytes(inputs) + cache


def _cases() -> tuple[tuple[str, str, str, int, str, str], ...]:
    out: list[tuple[str, str, str, int, str]] = []
    for name, dtype in product(SHAPES, DTYPES):
        if name in FULL:
            out.append((name, "train", dtype, 0, ""))
        if name in EVAL:
            out.append((name, "eval", dtype, 0, ""))
        out += [(name, "lora", dtype, r, t) for r, t in product(RANKS, TARGETS)]
    cases = []
    for (name, mode, dtype, rank, targets), ask in product(out, ASKS):
        if mode == "lora" and ask != "cache":
            continue
        i = {"model": name, "mode": mode, "rank": rank, "targets": targets, "ask": ask}
        if MIB <= answer_of(i) <= LARGEST_GPU_BYTES:
            cases.append((name, mode, dtype, rank, targets, ask))
    return tuple(cases)


SPACE = Space((grid("autocast", case=_cases()),))
SETUPS: Final[dict[str, Localized]] = {
    "train": Text("is fine-tuned in full with fp32 weights"),
    "eval": Text("is evaluated under torch.no_grad() with fp32 weights (requires_grad left on)"),
}
TARGET_TEXT: Final = {
    "qv": Text("query and value projections"),
    "attention": Text("attention projections"),
    "all": Text("attention and MLP projections"),
}
PROMPT = Text(
    "{model} {setup}, its forward pass under torch.autocast('cuda', dtype=torch.{dtype}). "
    "{question}"
)
QUESTIONS: Final = {
    "cache": Text(
        "How much memory does autocast's cast cache hold at the end of the forward pass?"
    ),
    "weights-and-cache": Text(
        "How much memory do its weights take at the end of the forward pass, their own "
        "storage plus autocast's cached casts?"
    ),
}


def _cache_candidates(i: dict[str, Any], answer: int) -> list[Candidate]:
    """Misconceptions about the cache alone (`answer` is the cache's bytes)."""
    name, mode = i["model"], i["mode"]
    d = decoder(name)
    parts = linear_params(name)
    linear = sum(parts.values())
    embed = d.vocab * d.hidden
    norms = d.hidden * (2 * d.layers + 1)
    out: list[Candidate] = [
        Candidate(
            "cast-cache-off",
            0,
            Text("as if casts were freed after each op; weights' casts are kept."),
        )
        if mode != "eval"
        else Candidate(
            "no-grad-disables-the-cache",
            0,
            Text("as if no_grad turned the cache off; weights still require grad."),
        ),
        Candidate(
            "fp32-copies",
            answer * 2,
            Text("4-byte copies; the cache holds {dtype} casts.", dtype=i["dtype"]),
            Text("4-byte copies"),
            "bytes",
        ),
        Candidate(
            "one-layer-at-a-time",
            answer // d.layers,
            Text("one layer's casts; the cache keeps them all until autocast exits."),
            Text("one layer"),
            "layers",
        ),
    ]
    if mode == "lora":
        wrong = {"qv": "attention", "attention": "all", "all": "attention"}[i["targets"]]
        out += [
            Candidate(
                "frozen-base-cached",
                answer + 2 * linear,
                Text(
                    "adds the frozen base; weights already in {dtype} need no cast, none is "
                    "cached.",
                    dtype=i["dtype"],
                ),
                Text("the base weights added"),
                "+base",
            ),
            Candidate(
                "base-weights-only",
                2 * linear,
                Text(
                    "the base weights; the frozen {dtype} base is not cast, adapters are.",
                    dtype=i["dtype"],
                ),
            ),
            Candidate(
                "full-rank-update",
                2 * _merged(name, i["targets"]),
                Text("the merged update B·A; autocast casts A and B themselves."),
            ),
            Candidate(
                "other-targets",
                2 * lora_params(name, i["rank"], wrong),
                Text(
                    "adapters on the {t}; here they sit on the {u}.",
                    t=TARGET_TEXT[wrong],
                    u=TARGET_TEXT[i["targets"]],
                ),
                Text("other projections"),
                "+targets",
            ),
            Candidate(
                "alpha-as-rank",
                answer * 2,
                Text("uses lora_alpha (2r) as the rank; the adapters have rank {r}.", r=i["rank"]),
                Text("rank doubled"),
                "rank",
            ),
            Candidate(
                "adapter-a-only",
                2 * _a_only(name, i["rank"], i["targets"]),
                Text("counts only the A matrices; B is a trainable fp32 weight too."),
                Text("A matrices only"),
                "+a-only",
            ),
        ]
    else:
        out += [
            Candidate(
                "embedding-cast-too",
                answer + 2 * embed,
                Text("casts the embedding too; a lookup is not a lower-precision op.")
                if not SHAPES[name].tied
                else Text("counts the tied embedding twice; its one cast serves the LM head."),
                Text("the embedding added"),
                "+embedding",
            ),
            Candidate(
                "lm-head-left-out",
                answer - 2 * parts["head"],
                Text("leaves out the LM head; it casts too (an nn.Linear or tied F.linear)."),
                Text("no LM head"),
                "+head",
            ),
            Candidate(
                "every-parameter-cast",
                answer + 2 * norms + 2 * embed,
                Text("casts every parameter, norms too; only linear layers cast."),
            ),
            Candidate(
                "mlp-only",
                2 * parts["mlp"],
                Text("the MLP alone; attention and the LM head cast too."),
                Text("the MLP alone"),
                "+mlp",
            ),
            Candidate(
                "attention-only",
                2 * (parts["q"] + parts["k"] + parts["v"] + parts["o"]),
                Text("attention alone; the MLP and the LM head cast too."),
                Text("attention alone"),
                "+attention",
            ),
        ]
    return out


def _storage_candidates(i: dict[str, Any], storage: int, cache: int) -> list[Candidate]:
    """Misconceptions about the weights' own storage beside the cache."""
    name = i["model"]
    d = decoder(name)
    out = [
        Candidate(
            "cache-only",
            cache,
            Text("the cache alone; the weights' own storage stays beside it."),
        )
    ]
    if not SHAPES[name].tied:
        out.append(
            Candidate(
                "head-tied-assumed",
                storage - 4 * d.vocab * d.hidden + cache,
                Text("counts one vocab × hidden matrix; this model's LM head is not tied."),
            )
        )
    return [
        *out,
        Candidate(
            "weights-cast-in-place",
            2 * total_params(name),
            Text("as if autocast converted the weights in place; it caches copies."),
        ),
        Candidate(
            "weights-in-2-bytes",
            2 * total_params(name) + cache,
            Text("stores the weights in 2 bytes; they are fp32, only their casts are not."),
        ),
    ]


def _candidates(i: dict[str, Any]) -> list[Candidate]:
    cache = cache_bytes(i)
    singles = _cache_candidates(i, cache)
    out = singles + compounds(cache, singles)
    if i["ask"] == "cache":
        return out
    storage = storage_bytes(i)
    shifted = [replace(c, value=storage + c.value) for c in out]
    return [*_storage_candidates(i, storage, cache), *shifted]


def _merged(name: str, targets: str) -> int:
    layers = decoder(name).layers
    return layers * sum(n_in * n_out for n_in, n_out in adapted_shapes(name, targets))


def _a_only(name: str, rank: int, targets: str) -> int:
    layers = decoder(name).layers
    return layers * rank * sum(n_in for n_in, _ in adapted_shapes(name, targets))


def _steps(i: dict[str, Any], cache: int) -> list[Localized]:
    name, mode = i["model"], i["mode"]
    total = i["ask"] != "cache"
    if mode == "lora":
        count = lora_params(name, i["rank"], i["targets"])
        steps: list[Localized] = [
            Text(
                "Only trainable fp32 leaves are cached: the frozen {dtype} base casts nothing; "
                "each adapted projection's A and B (r × (in + out) = {p} values in all) is cast "
                "once and kept.",
                dtype=i["dtype"],
                p=Number(count),
            )
        ]
    else:
        count = sum(linear_params(name).values())
        steps = [
            Text(
                "Every nn.Linear weight (and the LM head) is a trainable fp32 leaf: its {dtype} "
                "cast is cached at first use and kept; embedding lookups and norms cast nothing.",
                dtype=i["dtype"],
            )
        ]
    if not total:
        return [*steps, Text("{p} × 2 bytes = {answer}.", p=Number(count), answer=ANSWER)]
    return [
        Text(
            "The fp32 weights themselves: {P} parameters × 4 bytes = {s}.",
            P=Number(total_params(name)),
            s=Size(storage_bytes(i)),
        ),
        *steps,
        Text(
            "The cache: {p} × 2 bytes = {c}; in all {answer}.",
            p=Number(count),
            c=Size(cache),
            answer=ANSWER,
        ),
    ]


def build(variant: str, params: dict[str, Any]) -> Draft:
    name, mode, dtype, rank, targets, ask = params["case"]
    d = decoder(name)
    inputs: dict[str, Any] = {
        "kind": "autocast-cache",
        "model": name,
        "mode": mode,
        "ask": ask,
        "dtype": dtype,
        "rank": rank,
        "targets": targets,
        # the shape the answer follows from (config.json), so that it can be recomputed
        "layers": d.layers,
        "hidden": d.hidden,
        "q_dim": d.q_heads * d.head_dim,
        "kv_dim": d.kv_heads * d.head_dim,
        "ffn": SHAPES[name].ffn,
        "vocab": d.vocab,
        "tied": SHAPES[name].tied,
        "qkv_bias": SHAPES[name].bias,
    }
    if mode != "lora":
        setup = SETUPS[mode]
    else:
        setup = Text(
            "gets LoRA adapters (rank {r}, on the {t}) in fp32 over its frozen {dtype} weights",
            r=rank,
            t=TARGET_TEXT[targets],
            dtype=dtype,
        )
    prompt = PROMPT.fill(
        model=name,
        setup=setup,
        dtype="bfloat16" if dtype == "bf16" else "float16",
        question=QUESTIONS[ask],
    )
    return make_draft(
        "activation-memory",
        3,
        inputs,
        prompt,
        _steps(inputs, cache_bytes(inputs)),
        answer_of(inputs),
        _candidates(inputs),
        (
            "https://pytorch.org/docs/stable/amp.html",
            "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/autocast_mode.cpp",
            "https://github.com/huggingface/peft/blob/main/src/peft/tuners/tuners_utils.py",
            "https://arxiv.org/abs/2106.09685",
        ),
    )


FAMILY = formula_family(
    id="autocast-weight-cache",
    topic="activation-memory",
    difficulty=(3, 3),
    description=(
        "torch.autocast's cast cache at the end of a forward pass, alone or with the weights' "
        "own storage: full fine-tuning, evaluation under no_grad, LoRA over a frozen 16-bit base"
    ),
    space=SPACE,
    build=build,
)
