"""Family `training-state-per-gpu`: model-state bytes per GPU under ZeRO stages 0-3.

Per parameter: w bytes of weights, g of gradients, k of optimizer states. Stage 1 shards
the optimizer states over the N GPUs, stage 2 also the gradients, stage 3 also the
weights (ZeRO paper, section 5; activations and buffers not counted). The models and GPU
counts are published ones, and every scenario's states fit a GPU of 16 to 192 GB.
"""

from __future__ import annotations

from itertools import product
from typing import Any, Final, NamedTuple

from bot.formats import Number
from bot.i18n import Localized, Text
from questions.families.assemble import ANSWER
from questions.families.model import Candidate, Draft, formula_family, make_draft
from questions.families.models import DECODERS, LARGEST_GPU_BYTES, decoder
from questions.families.sizes import GIB
from questions.families.space import Space, grid


class Recipe(NamedTuple):
    weights: int
    grads: int
    optimizer: int
    name: Localized


RECIPES: Final = {
    "mixed-adam": Recipe(
        2,
        2,
        12,
        Text(
            "mixed-precision Adam (16-bit weights and gradients; fp32 master weights, "
            "momentum and variance)"
        ),
    ),
    "fp32-adam": Recipe(
        4, 4, 8, Text("fp32 Adam (32-bit weights, gradients, momentum and variance)")
    ),
    "bf16-adam": Recipe(
        2,
        2,
        4,
        Text("pure bf16 Adam (bf16 weights, gradients, momentum and variance; no fp32 copy)"),
    ),
    "mixed-sgd": Recipe(
        2,
        2,
        8,
        Text(
            "mixed-precision SGD with momentum (16-bit weights and gradients; fp32 master "
            "weights and momentum)"
        ),
    ),
}
GPUS: Final = (8, 16, 32, 64, 128, 256, 512, 1024)
FORMULA: Final = {
    0: "(w + g + k)P",
    1: "(w + g)P + kP/N",
    2: "wP + (g + k)P/N",
    3: "(w + g + k)P/N",
}


def per_gpu_bytes(params: float, w: int, g: int, k: int, stage: int, gpus: int) -> float:
    replicated = {0: w + g + k, 1: w + g, 2: w, 3: 0}[stage]
    return params * (replicated + (w + g + k - replicated) / gpus)


def _cases() -> tuple[tuple[str, str, int, int], ...]:
    """(model, recipe, stage, gpus) whose states per GPU lie between 1 GiB and 192 GB."""
    out = []
    for model, recipe, stage, gpus in product(DECODERS, RECIPES, range(4), GPUS):
        r = RECIPES[recipe]
        psi = model.params_b * 1e9
        value = per_gpu_bytes(psi, r.weights, r.grads, r.optimizer, stage, gpus)
        if GIB <= value <= LARGEST_GPU_BYTES and (stage > 0 or gpus == 8):
            out.append((model.name, recipe, stage, gpus))
    return tuple(out)


SPACE = Space((grid("zero", case=_cases()),))


def published_decimals(billions: float) -> int:
    """The decimals the figure is published with (8.03, 72.7, 405): the shortest repr's,
    since 8.03 is not exact in binary and a float test would drop its decimals."""
    text = repr(billions)
    return 0 if text.endswith(".0") or "." not in text else len(text.split(".")[1])


PROMPT = Text(
    "{model} ({p} billion parameters) is trained with {recipe}, ZeRO stage {s}, on {n} "
    "GPUs. How much memory do the model states take per GPU?"
)
SHARDED: Final = {
    0: Text("nothing is sharded"),
    1: Text("the optimizer states are sharded"),
    2: Text("gradients and optimizer states are sharded"),
    3: Text("everything is sharded"),
}


def build(variant: str, params: dict[str, Any]) -> Draft:
    name, recipe_id, stage, gpus = params["case"]
    model = decoder(name)
    recipe = RECIPES[recipe_id]
    psi = round(model.params_b * 1e9)
    w, g, k = recipe.weights, recipe.grads, recipe.optimizer
    inputs: dict[str, Any] = {
        "kind": "training-state-per-gpu",
        "model": name,
        "params": psi,
        "weight_bytes": w,
        "grad_bytes": g,
        "optimizer_bytes": k,
        "stage": stage,
        "gpus": gpus,
    }
    answer = per_gpu_bytes(psi, w, g, k, stage, gpus)
    steps = (
        Text(
            "Per parameter (P of them): {w} bytes of weights, {g} of gradients, {k} of optimizer "
            "states.",
            w=w,
            g=g,
            k=k,
        ),
        Text(
            "In stage {s} {what} over the N = {n} GPUs: {f} = {answer} per GPU.",
            s=stage,
            what=SHARDED[stage],
            n=gpus,
            f=FORMULA[stage],
            answer=ANSWER,
        ),
    )
    candidates = [
        Candidate(
            f"zero-stage-{other}",
            per_gpu_bytes(psi, w, g, k, other, gpus),
            Text("that is stage {o}, where {what}.", o=other, what=SHARDED[other]),
        )
        for other in range(4)
        if other != stage
    ]
    candidates += [
        Candidate(
            "optimizer-states-forgotten",
            per_gpu_bytes(psi, w, g, 0, stage, gpus),
            Text("leaves out the {k} bytes of optimizer states per parameter.", k=k),
        ),
        Candidate(
            "weights-only",
            per_gpu_bytes(psi, w, 0, 0, stage, gpus),
            Text("the weights alone; gradients and optimizer states are there too."),
        ),
        Candidate(
            "shards-over-nodes",
            per_gpu_bytes(psi, w, g, k, stage, max(1, gpus // 8)),
            Text(
                "shards over the {m} nodes; ZeRO shards over all {n} GPUs.",
                m=max(1, gpus // 8),
                n=gpus,
            ),
        ),
        Candidate(
            "sixteen-bytes-rule",
            per_gpu_bytes(psi, 2, 2, 12, stage, gpus),
            Text(
                "mixed Adam's 2 + 2 + 12 bytes per parameter; this recipe's are {w} + {g} + {k}.",
                w=w,
                g=g,
                k=k,
            ),
        ),
        Candidate(
            "gradients-forgotten",
            per_gpu_bytes(psi, w, 0, k, stage, gpus),
            Text("leaves out the {g} bytes of gradients per parameter.", g=g),
        ),
    ]
    if stage > 0 and gpus > 8:
        candidates.append(
            Candidate(
                "shards-within-a-node",
                per_gpu_bytes(psi, w, g, k, stage, 8),
                Text("shards within one 8-GPU node; ZeRO shards over all {n} GPUs.", n=gpus),
            )
        )
    if g == 2:
        candidates.append(
            Candidate(
                "fp32-gradients",
                per_gpu_bytes(psi, w, 4, k, stage, gpus),
                Text("keeps 4-byte gradients; this recipe's gradients are 16-bit."),
            )
        )
    # two errors at once: another stage with one term off, near that stage's own figure
    tweaks = [("gradients-forgotten", w, 0, k, Text("no gradients"))]
    if g == 2:
        tweaks.append(("fp32-gradients", w, 4, k, Text("4-byte gradients")))
    if k == 12:
        tweaks.append(("master-weights-forgotten", w, g, 8, Text("no master weights")))
    for other in range(4):
        if other == stage:
            continue
        for tweak, tw, tg, tk, what in tweaks:
            candidates.append(
                Candidate(
                    f"zero-stage-{other}-and-{tweak}",
                    per_gpu_bytes(psi, tw, tg, tk, other, gpus),
                    Text("stage {o}, {what}: two errors.", o=other, what=what),
                )
            )
    if k == 12:
        candidates.append(
            Candidate(
                "master-weights-forgotten",
                per_gpu_bytes(psi, w, g, 8, stage, gpus),
                Text("forgets the fp32 master weights (4 of the 12 optimizer bytes)."),
            )
        )
    if k >= 8:
        candidates.append(
            Candidate(
                "one-optimizer-state",
                per_gpu_bytes(psi, w, g, k - 4, stage, gpus),
                Text("one optimizer state too few; this one keeps {k} bytes.", k=k),
            )
        )
    prompt = PROMPT.fill(
        model=name,
        p=Number(model.params_b, published_decimals(model.params_b)),
        recipe=recipe.name,
        s=stage,
        n=gpus,
    )
    return make_draft(
        "distributed-sharding",
        2 if stage in (0, 3) else 3,
        inputs,
        prompt,
        steps,
        answer,
        candidates,
        (
            "https://arxiv.org/abs/1910.02054",
            "https://deepspeed.readthedocs.io/en/stable/zero3.html",
        ),
    )


FAMILY = formula_family(
    id="training-state-per-gpu",
    topic="distributed-sharding",
    difficulty=(2, 3),
    description=(
        "Model-state memory per GPU (weights, gradients, optimizer states) of a published "
        "model for a precision and optimizer recipe under ZeRO stage 0-3 on N GPUs"
    ),
    space=SPACE,
    build=build,
)
