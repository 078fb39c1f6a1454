"""Family `activation-checkpointing`: activation memory of a transformer's layers.

Korthikanti et al. (2022), section 4: with 16-bit activations and no tensor or sequence
parallelism one layer keeps s·b·h·(34 + 5·a·s/h) bytes for backward; selective
recomputation (attention recomputed) keeps 34·s·b·h; full checkpointing keeps only each
layer's input, 2·s·b·h. Times L layers.
"""

from __future__ import annotations

from typing import Any

from bot.domain import Locale
from questions.families.assemble import ANSWER
from questions.families.model import Candidate, Draft, Family, Style, Text
from questions.families.space import Space, grid
from questions.families.units import format_number

MODES = {
    "none": Text("with no recomputation", "χωρίς επανυπολογισμό"),
    "selective": Text(
        "with selective recomputation (of attention)",
        "με επιλεκτικό επανυπολογισμό (του attention)",
    ),
    "full": Text("with full checkpointing of every layer", "με πλήρες checkpointing κάθε επιπέδου"),
}
SPACE = Space(
    (
        grid(
            "transformer",
            layers=(12, 24, 32, 40, 48, 60, 80, 96),
            shape=(
                (768, 12),
                (1024, 16),
                (2048, 16),
                (2560, 32),
                (4096, 32),
                (5120, 40),
                (6144, 48),
                (8192, 64),
            ),
            seq=(512, 1024, 2048, 4096, 8192),
            batch=(1, 2, 4, 8, 16),
            mode=tuple(MODES),
        ),
    )
)
PROMPT = Text(
    "A GPT-style model: {L} layers, hidden size {h}, {a} heads, sequence {s}, micro-batch "
    "{b}, 16-bit activations, no tensor or sequence parallelism. By Korthikanti et al. (2022), "
    "how much activation memory do the layers keep for backward {mode}?",
    "Μοντέλο τύπου GPT: {L} επίπεδα, hidden size {h}, {a} heads, ακολουθία {s}, micro-batch "
    "{b}, ενεργοποιήσεις 16 bit, χωρίς tensor ή sequence parallelism. Κατά Korthikanti κ.ά. "
    "(2022), πόση μνήμη ενεργοποιήσεων κρατούν τα επίπεδα για το backward {mode};",
)
PER_LAYER = {
    "none": "sbh(34 + 5as/h)",
    "selective": "34sbh",
    "full": "2sbh",
}


def per_layer_bytes(mode: str, s: int, b: int, h: int, a: int) -> int:
    if mode == "full":
        return 2 * s * b * h
    if mode == "selective":
        return 34 * s * b * h
    return s * b * h * 34 + 5 * a * s * s * b


def num(value: int) -> Text:
    return Text(format_number(value, 0, Locale.EN), format_number(value, 0, Locale.EL))


def _candidates(
    mode: str, s: int, b: int, h: int, a: int, layers: int, answer: int
) -> list[Candidate]:
    out = [
        Candidate(
            f"{other}-instead",
            per_layer_bytes(other, s, b, h, a) * layers,
            Text("that is the figure {m}.", "είναι η τιμή {m}.").fill(m=MODES[other]),
        )
        for other in MODES
        if other != mode
    ]
    if mode == "none":
        out.append(
            Candidate(
                "attention-scores-forgotten",
                34 * s * b * h * layers,
                Text(
                    "that forgets the 5as/h term: the attention scores and softmax.",
                    "ξεχνά τον όρο 5as/h: τα attention scores και το softmax.",
                ),
            )
        )
    out += [
        Candidate(
            "fp32-activations",
            answer * 2,
            Text(
                "that assumes 32-bit activations; these are 16-bit.",
                "υποθέτει ενεργοποιήσεις 32 bit· εδώ είναι 16 bit.",
            ),
        ),
        Candidate(
            "one-layer-only",
            answer // layers,
            Text(
                "that is one layer; all {L} keep theirs until backward.",
                "είναι ένα επίπεδο· και τα {L} κρατούν τις δικές τους ως το backward.",
            ).fill(L=str(layers)),
        ),
    ]
    return out


def build(variant: str, params: dict[str, Any]) -> Draft:
    layers, (h, a) = int(params["layers"]), params["shape"]
    s, b, mode = int(params["seq"]), int(params["batch"]), str(params["mode"])
    inputs: dict[str, Any] = {
        "kind": "activation-memory",
        "layers": layers,
        "hidden": h,
        "heads": a,
        "seq": s,
        "batch": b,
        "bytes_per_value": 2,
        "recompute": mode,
    }
    per_layer = per_layer_bytes(mode, s, b, h, a)
    answer = per_layer * layers
    steps = (
        Text(
            "Per layer, {m}: {f} = {v} bytes (s = {s}, b = {b}, h = {h}, a = {a}).",
            "Ανά επίπεδο, {m}: {f} = {v} bytes (s = {s}, b = {b}, h = {h}, a = {a}).",
        ).fill(
            m=MODES[mode],
            f=PER_LAYER[mode],
            v=num(per_layer),
            s=str(s),
            b=str(b),
            h=str(h),
            a=str(a),
        ),
        Text("Times {L} layers: {answer}.", "Επί {L} επίπεδα: {answer}.").fill(
            L=str(layers), answer=ANSWER
        ),
    )
    prompt = PROMPT.fill(L=str(layers), h=str(h), a=str(a), s=str(s), b=str(b), mode=MODES[mode])
    return Draft(
        topic="activation-memory",
        difficulty=2 if mode == "full" else 3,
        inputs=inputs,
        prompt=prompt,
        steps=steps,
        answer=answer,
        style=Style.ROUNDED_SIZE,
        candidates=tuple(_candidates(mode, s, b, h, a, layers, answer)),
        references=(
            "https://arxiv.org/abs/2205.05198",
            "https://pytorch.org/docs/stable/checkpoint.html",
        ),
    )


FAMILY = Family(
    id="activation-checkpointing",
    topic="activation-memory",
    kind="formula",
    difficulty=(2, 3),
    description=(
        "Activation memory of a transformer's layers with no recomputation, selective "
        "recomputation or full checkpointing (Korthikanti et al. 2022)"
    ),
    space=SPACE,
    build=build,
)
