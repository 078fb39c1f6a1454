"""Family `training-state-per-gpu`: model-state bytes per GPU under ZeRO stages 0-3.

Per parameter: w bytes of weights, g of gradients, k of optimizer states. Stage 1 shards
the optimizer states over the N GPUs, stage 2 also the gradients, stage 3 also the
weights (ZeRO paper, section 5; activations and buffers not counted).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from bot.domain import Locale
from questions.families.assemble import ANSWER
from questions.families.model import Candidate, Draft, Family, Style, Text
from questions.families.space import Space, grid
from questions.families.units import exact_decimals, format_number


class Recipe(NamedTuple):
    weights: int
    grads: int
    optimizer: int
    name: Text


RECIPES = {
    "mixed-adam": Recipe(
        2,
        2,
        12,
        Text(
            "mixed-precision Adam (16-bit weights and gradients; fp32 master weights, "
            "momentum and variance)",
            "Adam μικτής ακρίβειας (βάρη και κλίσεις 16 bit· fp32 master βάρη, momentum και "
            "variance)",
        ),
    ),
    "fp32-adam": Recipe(
        4,
        4,
        8,
        Text(
            "fp32 Adam (32-bit weights, gradients, momentum and variance)",
            "Adam σε fp32 (βάρη, κλίσεις, momentum και variance 32 bit)",
        ),
    ),
    "bf16-adam": Recipe(
        2,
        2,
        4,
        Text(
            "pure bf16 Adam (bf16 weights, gradients, momentum and variance; no fp32 copy)",
            "Adam μόνο σε bf16 (βάρη, κλίσεις, momentum και variance σε bf16· χωρίς αντίγραφο "
            "fp32)",
        ),
    ),
    "mixed-sgd": Recipe(
        2,
        2,
        8,
        Text(
            "mixed-precision SGD with momentum (16-bit weights and gradients; fp32 master "
            "weights and momentum)",
            "SGD με momentum μικτής ακρίβειας (βάρη και κλίσεις 16 bit· fp32 master βάρη και "
            "momentum)",
        ),
    ),
}
PARAMS_B = (0.35, 0.77, 1.3, 1.5, 2.7, 3, 6.7, 7, 8, 13, 14, 20, 30, 34, 40, 65, 70, 72, 110, 175)
SPACE = Space(
    (
        grid(
            "zero",
            params=PARAMS_B,
            recipe=tuple(RECIPES),
            stage=(0, 1, 2, 3),
            gpus=(2, 4, 8, 16, 32, 64, 128, 256, 512),
        ),
    )
)
PROMPT = Text(
    "A {p}B-parameter model is trained with {recipe} under ZeRO stage {s} on {n} GPUs. How "
    "much memory do the model states take per GPU?",
    "Ένα μοντέλο {p}B παραμέτρων εκπαιδεύεται με {recipe} σε ZeRO stage {s} σε {n} GPU. "
    "Πόση μνήμη καταλαμβάνουν οι καταστάσεις του μοντέλου ανά GPU;",
)
SHARDED = {
    0: Text("nothing is sharded", "τίποτα δεν μοιράζεται"),
    1: Text("the optimizer states are sharded", "μοιράζονται οι καταστάσεις του βελτιστοποιητή"),
    2: Text(
        "gradients and optimizer states are sharded",
        "μοιράζονται κλίσεις και καταστάσεις του βελτιστοποιητή",
    ),
    3: Text("everything is sharded", "μοιράζονται όλα"),
}
FORMULA = {0: "(w + g + k)Ψ", 1: "(w + g)Ψ + kΨ/N", 2: "wΨ + (g + k)Ψ/N", 3: "(w + g + k)Ψ/N"}


def per_gpu_bytes(params: float, w: int, g: int, k: int, stage: int, gpus: int) -> float:
    replicated = {0: w + g + k, 1: w + g, 2: w, 3: 0}[stage]
    return params * (replicated + (w + g + k - replicated) / gpus)


def build(variant: str, params: dict[str, Any]) -> Draft:
    recipe = RECIPES[str(params["recipe"])]
    stage, gpus = int(params["stage"]), int(params["gpus"])
    psi = round(float(params["params"]) * 1e9)
    w, g, k = recipe.weights, recipe.grads, recipe.optimizer
    inputs: dict[str, Any] = {
        "kind": "training-state-per-gpu",
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
            "Per parameter: {w} bytes of weights, {g} of gradients, {k} of optimizer states.",
            "Ανά παράμετρο: {w} bytes βάρη, {g} κλίσεις, {k} καταστάσεις βελτιστοποιητή.",
        ).fill(w=str(w), g=str(g), k=str(k)),
        Text(
            "In stage {s} {what} over the N = {n} GPUs: {f} = {answer} per GPU.",
            "Στο stage {s} {what} στις N = {n} GPU: {f} = {answer} ανά GPU.",
        ).fill(s=str(stage), what=SHARDED[stage], n=str(gpus), f=FORMULA[stage], answer=ANSWER),
    )
    candidates = [
        Candidate(
            f"zero-stage-{other}",
            per_gpu_bytes(psi, w, g, k, other, gpus),
            Text("that is stage {o}, where {what}.", "είναι το stage {o}, όπου {what}.").fill(
                o=str(other), what=SHARDED[other]
            ),
        )
        for other in sorted(range(4), key=lambda o: abs(o - stage))
        if other != stage
    ]
    candidates.insert(
        1,
        Candidate(
            "optimizer-states-forgotten",
            per_gpu_bytes(psi, w, g, 0, stage, gpus),
            Text(
                "that leaves out the {k} bytes of optimizer states per parameter.",
                "παραλείπει τα {k} bytes καταστάσεων βελτιστοποιητή ανά παράμετρο.",
            ).fill(k=str(k)),
        ),
    )
    if k == 12:
        candidates.insert(
            2,
            Candidate(
                "master-weights-forgotten",
                per_gpu_bytes(psi, w, g, 8, stage, gpus),
                Text(
                    "that forgets the fp32 master weights (4 of the 12 optimizer bytes).",
                    "ξεχνά τα fp32 master βάρη (4 από τα 12 bytes του βελτιστοποιητή).",
                ),
            ),
        )
    billions = float(params["params"])
    decimals = exact_decimals(billions) or 0
    prompt = PROMPT.fill(
        p=Text(
            format_number(billions, decimals, Locale.EN),
            format_number(billions, decimals, Locale.EL),
        ),
        recipe=recipe.name,
        s=str(stage),
        n=str(gpus),
    )
    return Draft(
        topic="distributed-sharding",
        difficulty=2 if stage in (0, 3) else 3,
        inputs=inputs,
        prompt=prompt,
        steps=steps,
        answer=answer,
        style=Style.ROUNDED_SIZE,
        candidates=tuple(candidates),
        references=(
            "https://arxiv.org/abs/1910.02054",
            "https://deepspeed.readthedocs.io/en/stable/zero3.html",
        ),
    )


FAMILY = Family(
    id="training-state-per-gpu",
    topic="distributed-sharding",
    kind="formula",
    difficulty=(2, 3),
    description=(
        "Model-state memory per GPU (weights, gradients, optimizer states) for a precision "
        "and optimizer recipe under ZeRO stage 0-3 on N GPUs"
    ),
    space=SPACE,
    build=build,
)
