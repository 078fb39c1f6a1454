"""Family `activation-checkpointing`: activation memory per GPU of a GPT-style model's
transformer layers, with tensor (and sequence) parallelism and recomputation.

Korthikanti et al. (2022), Table 2, 16-bit activations, per layer:

| setting | bytes |
|---|---|
| no parallelism | sbh(34 + 5as/h) |
| tensor parallel (t) | sbh(10 + 24/t + 5as/(ht)) |
| tensor + sequence parallel | sbh(34/t + 5as/(ht)) |
| tensor parallel + selective recomputation | sbh(10 + 24/t) |
| tensor + sequence parallel + selective recomputation | sbh(34/t) |
| full recomputation | 2sbh |

Times L layers. The models are the paper's own (Table 3) and GPT-3-style sizes, with the
tensor-parallel sizes they train with; every answer fits a GPU of 16 to 192 GB.
"""

from __future__ import annotations

from itertools import product
from typing import Any, Final

from bot.formats import Number
from bot.i18n import Localized, Text
from questions.families.assemble import ANSWER
from questions.families.model import Candidate, Draft, formula_family, make_draft
from questions.families.models import LARGEST_GPU_BYTES
from questions.families.sizes import GIB
from questions.families.space import Space, grid

# (name, layers, hidden, heads, tensor-parallel sizes)
MODELS: Final = (
    ("GPT-3 2.7B", 32, 2560, 32, (1, 2)),
    ("GPT-3 6.7B", 32, 4096, 32, (1, 2, 4)),
    ("GPT-3 13B", 40, 5120, 40, (2, 4, 8)),
    ("Megatron 22B", 48, 6144, 64, (4, 8)),
    ("GPT-3 175B", 96, 12288, 96, (8,)),
    ("Megatron 530B", 105, 20480, 128, (8,)),
    ("Megatron 1T", 128, 25600, 160, (8,)),
)
SEQUENCES: Final = (1024, 2048, 4096, 8192)
MICRO_BATCHES: Final = (1, 2, 4, 8, 16)
MODES: Final = ("none", "selective", "full")
FORMULAS: Final = {
    ("none", False): "sbh(10 + 24/t + 5as/(ht))",
    ("none", True): "sbh(34/t + 5as/(ht))",
    ("selective", False): "sbh(10 + 24/t)",
    ("selective", True): "sbh(34/t)",
    ("full", False): "2sbh",
    ("full", True): "2sbh",
}


def per_layer_bytes(mode: str, s: int, b: int, h: int, a: int, t: int, sp: bool) -> float:
    """Korthikanti et al. Table 2 (t = 1 gives the no-parallelism rows)."""
    if mode == "full":
        return 2 * s * b * h
    attention = 5 * a * s / (h * t) if mode == "none" else 0.0
    linear = 34 / t if sp else 10 + 24 / t
    return s * b * h * (linear + attention)


def _cases() -> tuple[tuple[str, int, int, int, bool, str], ...]:
    out = []
    for (name, layers, h, a, tps), s, b, mode in product(MODELS, SEQUENCES, MICRO_BATCHES, MODES):
        for t in tps:
            for sp in (False, True) if t > 1 and mode != "full" else (False,):
                value = per_layer_bytes(mode, s, b, h, a, t, sp) * layers
                if GIB // 2 <= value <= LARGEST_GPU_BYTES:
                    out.append((name, s, b, t, sp, mode))
    return tuple(out)


SPACE = Space((grid("transformer", case=_cases()),))
PROMPT = Text(
    "{model}: {L} layers, hidden size {h}, {a} heads; sequence {s}, micro-batch {b}, "
    "16-bit activations, {parallel}. By Korthikanti et al. (2022), what activation memory "
    "do the layers keep per GPU {mode}?"
)
MODE_TEXT: Final = {
    "none": Text("with no recomputation"),
    "selective": Text("with selective recomputation (of attention)"),
    "full": Text("with full recomputation of every layer"),
}


def _parallel(t: int, sp: bool) -> Localized:
    if t == 1:
        return Text("no tensor parallelism")
    if sp:
        return Text("tensor parallel size {t} with sequence parallelism", t=t)
    return Text("tensor parallel size {t}, no sequence parallelism", t=t)


def _candidates(c: dict[str, Any], answer: float) -> list[Candidate]:
    mode, s, b, h, a, t, sp, layers = (
        c["recompute"],
        c["seq"],
        c["batch"],
        c["hidden"],
        c["heads"],
        c["tensor_parallel"],
        c["sequence_parallel"],
        c["layers"],
    )

    def total(m: str = mode, tt: int = t, ssp: bool = sp, bb: int = b) -> float:
        return float(per_layer_bytes(m, s, bb, h, a, tt, ssp) * layers)

    out = [
        Candidate(
            f"{other}-instead",
            total(other),
            Text("that is the figure {m}.", m=MODE_TEXT[other]),
        )
        for other in MODES
        if other != mode
    ]
    out += [
        Candidate(
            "fp32-activations",
            answer * 2,
            Text("assumes 32-bit activations; these are 16-bit."),
        ),
        Candidate(
            "one-layer-only",
            answer / layers,
            Text("one layer; all {L} keep theirs until backward.", L=layers),
        ),
    ]
    if b > 1:
        out.append(
            Candidate(
                "micro-batch-forgotten",
                total(bb=1),
                Text("one sequence; the micro-batch holds {b}.", b=b),
            )
        )
        out.append(
            Candidate(
                "one-layer-one-sequence",
                total(bb=1) / layers,
                Text("one layer of one sequence; all of them are kept."),
            )
        )
    if mode == "none":
        out.append(
            Candidate(
                "attention-scores-forgotten",
                total("selective"),
                Text("forgets the 5as/h term: the attention scores and softmax."),
            )
        )
        out.append(
            Candidate(
                "attention-scores-not-split",
                answer + 5 * a * s * s * b * layers * (1 - 1 / t),
                Text("keeps the whole 5as/h term; the heads are split over {t} GPUs.", t=t),
            )
            if t > 1
            else Candidate(
                "attention-term-squared-sequence-missed",
                s * b * h * (34 + 5 * a / h) * layers,
                Text("takes 5a/h for 5as/h: the scores grow with the sequence squared."),
            )
        )
    if t > 1 and mode != "full":
        out.append(
            Candidate(
                "tensor-parallel-forgotten",
                total(tt=1, ssp=False),
                Text("the figure without tensor parallelism; each GPU keeps its share."),
            )
        )
        out.append(
            Candidate(
                "sequence-parallel-confused",
                total(ssp=not sp),
                Text("the figure without sequence parallelism.")
                if sp
                else Text("the figure with sequence parallelism, which is off here."),
            )
        )
        out.append(
            Candidate(
                "everything-divided-by-t",
                s * b * h * (34 + (5 * a * s / h if mode == "none" else 0)) * layers / t,
                Text("divides it all by {t}; without sequence parallelism 10sbh stays.", t=t),
            )
            if not sp
            else Candidate(
                "all-gpus-summed",
                answer * t,
                Text("the {t} GPUs together; the question asks per GPU.", t=t),
            )
        )
    if mode == "full" and t > 1:
        out.append(
            Candidate(
                "full-divided-by-t",
                answer / t,
                Text("splits the inputs over {t} GPUs; Table 2 keeps 2sbh per GPU.", t=t),
            )
        )
    # the same errors with 32-bit activations besides: two errors at once
    fp32 = LABELS["fp32-activations"]
    out += [
        Candidate(
            f"{c.misconception}-and-fp32",
            c.value * 2,
            Text("two errors: {a} and {b}.", a=_label(c.misconception, sp), b=fp32),
        )
        for c in list(out)
        if c.misconception != "fp32-activations"
    ]
    return out


# a short name of each error, for the note of two errors at once
LABELS: Final[dict[str, Localized]] = {
    "none-instead": Text("no recomputation"),
    "selective-instead": Text("selective recomputation"),
    "full-instead": Text("full recomputation"),
    "fp32-activations": Text("32-bit activations"),
    "one-layer-only": Text("one layer"),
    "micro-batch-forgotten": Text("one sequence"),
    "one-layer-one-sequence": Text("one layer of one sequence"),
    "attention-scores-forgotten": Text("no attention scores"),
    "attention-scores-not-split": Text("unsplit attention scores"),
    "attention-term-squared-sequence-missed": Text("5a/h for 5as/h"),
    "tensor-parallel-forgotten": Text("no tensor parallelism"),
    "everything-divided-by-t": Text("everything divided by t"),
    "all-gpus-summed": Text("all GPUs summed"),
    "full-divided-by-t": Text("2sbh split over the GPUs"),
}


def _label(misconception: str, sp: bool) -> Localized:
    if misconception == "sequence-parallel-confused":
        return Text("no sequence parallelism") if sp else Text("sequence parallelism")
    return LABELS[misconception]


def build(variant: str, params: dict[str, Any]) -> Draft:
    name, s, b, t, sp, mode = params["case"]
    _, layers, h, a, _ = next(m for m in MODELS if m[0] == name)
    inputs: dict[str, Any] = {
        "kind": "activation-memory",
        "model": name,
        "layers": layers,
        "hidden": h,
        "heads": a,
        "seq": s,
        "batch": b,
        "tensor_parallel": t,
        "sequence_parallel": sp,
        "bytes_per_value": 2,
        "recompute": mode,
    }
    per_layer = per_layer_bytes(mode, s, b, h, a, t, sp)
    answer = per_layer * layers
    steps = (
        Text(
            "Per layer, {m}, {p}: {f} = {v} bytes (s = {s}, b = {b}, h = {h}, a = {a}, t = {t}).",
            m=MODE_TEXT[mode],
            p=_parallel(t, sp),
            f=FORMULAS[(mode, sp)],
            v=Number(round(per_layer)),
            s=s,
            b=b,
            h=h,
            a=a,
            t=t,
        ),
        Text("Times {L} layers: {answer}.", L=layers, answer=ANSWER),
    )
    prompt = PROMPT.fill(
        model=name,
        L=layers,
        h=h,
        a=a,
        s=s,
        b=b,
        parallel=_parallel(t, sp),
        mode=MODE_TEXT[mode],
    )
    return make_draft(
        "activation-memory",
        2 if mode == "full" and t == 1 else 3,
        inputs,
        prompt,
        steps,
        answer,
        _candidates(inputs, answer),
        (
            "https://arxiv.org/abs/2205.05198",
            "https://pytorch.org/docs/stable/checkpoint.html",
        ),
    )


FAMILY = formula_family(
    id="activation-checkpointing",
    topic="activation-memory",
    difficulty=(2, 3),
    description=(
        "Activation memory per GPU of a GPT-style model's layers with no, selective or full "
        "recomputation, with tensor and sequence parallelism (Korthikanti et al. 2022)"
    ),
    space=SPACE,
    build=build,
)
