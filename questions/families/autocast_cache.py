"""Family `autocast-weight-cache`: what ``torch.autocast``'s cast cache holds.

Inside an autocast region, ops on the lower-precision list (``linear``, ``matmul``, ...)
cast their fp32 inputs to the autocast dtype. A cast of a tensor that is an fp32 leaf
requiring grad, not a view (a trainable parameter) is cached and reused until the
outermost autocast region exits (``cached_cast`` in aten/src/ATen/autocast_mode.cpp;
``cache_enabled=True`` by default); every other cast is done again at each use. So by the
end of a forward pass the cache holds a bf16/fp16 copy of every trainable fp32 weight an
``nn.Linear`` (or the tied LM head) used. It holds under ``torch.no_grad()`` too (the
parameters still require grad). Embedding lookups and norms are not lower-precision ops:
they cast nothing. Frozen weights (requires_grad=False) and weights already in bf16 are
not cached. tests/questions/families/test_autocast_facts.py checks these rules on the
installed PyTorch.
"""

from __future__ import annotations

from itertools import product
from typing import Any, Final, NamedTuple

from bot.formats import Number
from bot.i18n import Localized, Text
from questions.families.assemble import ANSWER
from questions.families.misconceptions import compounds
from questions.families.model import Candidate, Draft, Family, Style
from questions.families.models import LARGEST_GPU_BYTES, decoder
from questions.families.sizes import MIB
from questions.families.space import Space, grid


class Shape(NamedTuple):
    ffn: int  # intermediate_size of the SwiGLU MLP
    tied: bool  # LM head shares the embedding matrix


# Llama-style models without biases (config.json: intermediate_size, tie_word_embeddings)
SHAPES: Final = {
    "Llama-3.2-1B": Shape(8192, True),
    "Llama-3.2-3B": Shape(8192, True),
    "Llama-2-7B": Shape(11008, False),
    "Llama-3.1-8B": Shape(14336, False),
    "Mistral-7B-v0.3": Shape(14336, False),
    "Llama-2-13B": Shape(13824, False),
    "Mistral-Nemo-12B": Shape(14336, False),
    "Llama-2-70B": Shape(28672, False),
    "Llama-3.1-70B": Shape(28672, False),
}
MODES: Final = ("train", "eval", "lora")
# single-GPU set-ups: fp32 weights for full fine-tuning (small models) or evaluation;
# LoRA on a bf16 base for the rest
FULL: Final = ("Llama-3.2-1B", "Llama-3.2-3B", "Llama-2-7B", "Llama-3.1-8B", "Mistral-7B-v0.3")
EVAL: Final = (*FULL, "Llama-2-13B", "Mistral-Nemo-12B")
RANKS: Final = (8, 16, 32, 64)
TARGETS: Final = ("attention", "all")
DTYPES: Final = ("bf16", "fp16")


def linear_params(name: str) -> dict[str, int]:
    """nn.Linear weights per kind of layer, summed over the model (no biases)."""
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


def lora_params(name: str, rank: int, targets: str) -> int:
    """LoRA A (r × in) and B (out × r) of every adapted projection."""
    d = decoder(name)
    q, kv = d.q_heads * d.head_dim, d.kv_heads * d.head_dim
    shapes = [(d.hidden, q), (d.hidden, kv), (d.hidden, kv), (q, d.hidden)]
    if targets == "all":
        ffn = SHAPES[name].ffn
        shapes += [(d.hidden, ffn), (d.hidden, ffn), (ffn, d.hidden)]
    return d.layers * sum(rank * (n_in + n_out) for n_in, n_out in shapes)


def cache_bytes(inputs: dict[str, Any]) -> int:
    if inputs["mode"] == "lora":
        return 2 * lora_params(inputs["model"], inputs["rank"], inputs["targets"])
    return 2 * sum(linear_params(inputs["model"]).values())


def _cases() -> tuple[tuple[str, str, str, int, str], ...]:
    out: list[tuple[str, str, str, int, str]] = []
    for name, dtype in product(SHAPES, DTYPES):
        if name in FULL:
            out.append((name, "train", dtype, 0, ""))
        if name in EVAL:
            out.append((name, "eval", dtype, 0, ""))
        out += [(name, "lora", dtype, r, t) for r, t in product(RANKS, TARGETS)]
    return tuple(
        c
        for c in out
        if MIB
        <= cache_bytes({"model": c[0], "mode": c[1], "rank": c[3], "targets": c[4]})
        <= LARGEST_GPU_BYTES
    )


SPACE = Space((grid("autocast", case=_cases()),))
SETUPS: Final[dict[str, Localized]] = {
    "train": Text("is fine-tuned in full with fp32 weights"),
    "eval": Text("is evaluated under torch.no_grad() with fp32 weights (requires_grad left on)"),
}
TARGET_TEXT: Final = {
    "attention": Text("attention projections"),
    "all": Text("attention and MLP projections"),
}
PROMPT = Text(
    "{model} {setup}, its forward pass under torch.autocast('cuda', dtype=torch.{dtype}). "
    "How much memory does autocast's cast cache hold at the end of the forward pass?"
)


def _candidates(i: dict[str, Any], answer: int) -> list[Candidate]:
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
        wrong = "all" if i["targets"] == "attention" else "attention"
        out += [
            Candidate(
                "frozen-base-cached",
                answer + 2 * linear,
                Text("adds the frozen bf16 base; it needs no cast, so none is cached."),
                Text("the base weights added"),
                "+base",
            ),
            Candidate(
                "base-weights-only",
                2 * linear,
                Text("the base weights; the frozen bf16 base is not cast, adapters are."),
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
    return out + compounds(answer, out)


def _merged(name: str, targets: str) -> int:
    d = decoder(name)
    q, kv = d.q_heads * d.head_dim, d.kv_heads * d.head_dim
    shapes = [(d.hidden, q), (d.hidden, kv), (d.hidden, kv), (q, d.hidden)]
    if targets == "all":
        ffn = SHAPES[name].ffn
        shapes += [(d.hidden, ffn), (d.hidden, ffn), (ffn, d.hidden)]
    return d.layers * sum(n_in * n_out for n_in, n_out in shapes)


def _a_only(name: str, rank: int, targets: str) -> int:
    d = decoder(name)
    q = d.q_heads * d.head_dim
    ins = [d.hidden, d.hidden, d.hidden, q]
    if targets == "all":
        ins += [d.hidden, d.hidden, SHAPES[name].ffn]
    return d.layers * rank * sum(ins)


def build(variant: str, params: dict[str, Any]) -> Draft:
    name, mode, dtype, rank, targets = params["case"]
    d = decoder(name)
    inputs: dict[str, Any] = {
        "kind": "autocast-cache",
        "model": name,
        "mode": mode,
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
    }
    answer = cache_bytes(inputs)
    if mode == "lora":
        count = lora_params(name, rank, targets)
        steps: tuple[Localized, ...] = (
            Text(
                "Only trainable fp32 leaves are cached: the frozen bf16 base casts nothing; "
                "each adapted projection's A and B (r × (in + out) = {p} values in all) is cast "
                "once and kept.",
                p=Number(count),
            ),
            Text("{p} × 2 bytes = {answer}.", p=Number(count), answer=ANSWER),
        )
    else:
        count = sum(linear_params(name).values())
        steps = (
            Text(
                "Every nn.Linear weight (and the LM head) is a trainable fp32 leaf: its {dtype} "
                "cast is cached at first use and kept; embedding lookups and norms cast nothing.",
                dtype=dtype,
            ),
            Text(
                "{L} layers of projections and MLP plus the LM head: {p} weights × 2 bytes = "
                "{answer}.",
                L=d.layers,
                p=Number(count),
                answer=ANSWER,
            ),
        )
    if mode != "lora":
        setup = SETUPS[mode]
    else:
        setup = Text(
            "gets LoRA adapters (rank {r}, on the {t}) in fp32 over its frozen bf16 weights",
            r=rank,
            t=TARGET_TEXT[targets],
        )
    prompt = PROMPT.fill(
        model=name, setup=setup, dtype="bfloat16" if dtype == "bf16" else "float16"
    )
    return Draft(
        topic="activation-memory",
        difficulty=3,
        inputs=inputs,
        prompt=prompt,
        steps=steps,
        answer=answer,
        style=Style.ROUNDED_SIZE,
        candidates=tuple(_candidates(inputs, answer)),
        references=(
            "https://pytorch.org/docs/stable/amp.html",
            "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/autocast_mode.cpp",
            "https://arxiv.org/abs/2106.09685",
        ),
    )


FAMILY = Family(
    id="autocast-weight-cache",
    topic="activation-memory",
    kind="formula",
    difficulty=(3, 3),
    description=(
        "torch.autocast's cast cache at the end of a forward pass: full fine-tuning, "
        "evaluation under no_grad, LoRA over a frozen bf16 base"
    ),
    space=SPACE,
    build=build,
)
