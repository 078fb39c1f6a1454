"""Family `lm-head-logits`: the memory of a language model's logits and their fp32 copy
in the loss.

The LM head turns every token's hidden state into V logits: a [b, s, V] tensor, in the
activation dtype (bf16). Hugging Face's causal-LM loss upcasts it first
(``logits = logits.float()``): a second, fp32 tensor of the same shape, and at that moment
both exist. torchtune's ``CEWithChunkedOutputLoss`` (8 chunks by default) keeps the logits
as chunks along the tokens and upcasts one chunk at a time. With a large vocabulary this
is often the largest single tensor of a training step.
"""

from __future__ import annotations

from itertools import product
from typing import Any, Final

from bot.formats import Number
from bot.i18n import Localized, Text
from questions.families.assemble import ANSWER
from questions.families.misconceptions import compounds
from questions.families.model import Candidate, Draft, formula_family, make_draft
from questions.families.models import DECODERS, LARGEST_GPU_BYTES, decoder
from questions.families.sizes import MIB
from questions.families.space import Space, grid

ASKS: Final = ("logits", "fp32-copy", "upcast-peak", "chunk")
SEQUENCES: Final = (2048, 4096, 8192, 16384)
MICRO_BATCHES: Final = (1, 2, 4, 8, 16)
CHUNKS: Final = (4, 8, 16)
MODELS: Final = tuple(d for d in DECODERS if d.vocab >= 32000)


def logits_bytes(inputs: dict[str, Any]) -> int:
    tokens = inputs["batch"] * inputs["seq"]
    per = {"logits": 2, "fp32-copy": 4, "upcast-peak": 6, "chunk": 4}[inputs["ask"]]
    if inputs["ask"] == "chunk":
        tokens //= inputs["chunks"]
    return int(tokens * inputs["vocab"] * per)


def _cases() -> tuple[tuple[str, int, int, str, int], ...]:
    out = []
    for model, s, b, ask in product(MODELS, SEQUENCES, MICRO_BATCHES, ASKS):
        if s > model.context:
            continue
        for chunks in CHUNKS if ask == "chunk" else (8,):
            value = logits_bytes(
                {"batch": b, "seq": s, "vocab": model.vocab, "ask": ask, "chunks": chunks}
            )
            if 128 * MIB <= value <= LARGEST_GPU_BYTES:
                out.append((model.name, s, b, ask, chunks))
    return tuple(out)


SPACE = Space((grid("loss", case=_cases()),))


def _question(ask: str, chunks: int) -> Localized:
    if ask == "logits":
        return Text("How much memory does the bf16 logits tensor take?")
    if ask == "fp32-copy":
        return Text("The loss upcasts the logits to fp32 first. How much does that copy take?")
    if ask == "upcast-peak":
        return Text(
            "The loss upcasts the logits to fp32. How much do the bf16 logits and their fp32 "
            "copy take together at that moment?"
        )
    return Text(
        "A chunked cross-entropy splits the tokens into {n} chunks and upcasts one at a "
        "time. How much does one fp32 chunk take?",
        n=chunks,
    )


PROMPT = Text(
    "{model} (vocabulary {V}, hidden size {h}) is fine-tuned in bf16 with micro-batches of "
    "{b} × {s} tokens. {question}"
)


def _candidates(i: dict[str, Any], answer: int) -> list[Candidate]:
    b, s, v, h = i["batch"], i["seq"], i["vocab"], i["hidden"]
    ask, n = i["ask"], i["chunks"]
    per = {"logits": 2, "fp32-copy": 4, "upcast-peak": 6, "chunk": 4}[ask]
    tokens = b * s // (n if ask == "chunk" else 1)
    out = [
        Candidate(
            "hidden-size-for-vocabulary",
            tokens * h * per,
            Text("uses the hidden size {h}; the logits have V = {V} per token.", h=h, V=Number(v)),
            Text("the hidden size for V"),
            "vocab",
        ),
        Candidate(
            "every-layer-has-logits",
            answer * i["layers"],
            Text(
                "logits in each of the {L} layers; only the LM head makes them.",
                L=i["layers"],
            ),
            Text("logits per layer"),
            "layers",
        ),
        Candidate(
            "lm-head-weight",
            h * v * 2,
            Text("the LM head's weight, V × h in bf16; the logits are tokens × V."),
        ),
    ]
    if b > 1:
        out.append(
            Candidate(
                "micro-batch-forgotten",
                answer // b,
                Text("one sequence; the micro-batch holds {b}.", b=b),
                Text("one sequence"),
                "tokens",
            )
        )
    if ask == "logits":
        out += [
            Candidate(
                "fp32-not-bf16",
                answer * 2,
                Text("4 bytes per logit; bf16 has 2."),
                Text("4-byte logits"),
                "bytes",
            ),
            Candidate(
                "fp8-logits",
                answer // 2,
                Text("1 byte per logit; bf16 has 2."),
                Text("1-byte logits"),
                "bytes",
            ),
            Candidate(
                "logits-and-copy",
                answer * 3,
                Text("adds the fp32 copy; the question asks the bf16 tensor."),
            ),
        ]
    elif ask == "fp32-copy":
        out += [
            Candidate(
                "bf16-not-fp32",
                answer // 2,
                Text("2 bytes per logit; the copy is fp32, 4."),
                Text("2-byte values"),
                "bytes",
            ),
            Candidate(
                "fp64-copy",
                answer * 2,
                Text("8 bytes per logit; .float() makes fp32, 4."),
                Text("8-byte values"),
                "bytes",
            ),
            Candidate(
                "logits-and-copy",
                answer * 3 // 2,
                Text("adds the bf16 logits; the question asks the copy."),
            ),
        ]
    elif ask == "upcast-peak":
        out += [
            Candidate(
                "copy-only",
                answer * 2 // 3,
                Text("the fp32 copy alone; the bf16 logits still exist."),
                Text("the copy alone"),
                "bytes",
            ),
            Candidate(
                "logits-only",
                answer // 3,
                Text("the bf16 logits alone; the fp32 copy exists too."),
                Text("the logits alone"),
                "bytes",
            ),
            Candidate(
                "two-fp32-tensors",
                answer * 4 // 3,
                Text("two fp32 tensors; the logits are bf16, 2 bytes."),
                Text("two fp32 tensors"),
                "bytes",
            ),
        ]
    else:
        out += [
            Candidate(
                "all-chunks",
                answer * n,
                Text("all {n} chunks; only one is upcast at a time.", n=n),
                Text("all chunks"),
                "tokens",
            ),
            Candidate(
                "bf16-chunk",
                answer // 2,
                Text("2 bytes per logit; the upcast chunk is fp32."),
                Text("2-byte values"),
                "bytes",
            ),
            Candidate(
                "chunk-plus-bf16-logits",
                answer + b * s * v * 2,
                Text("adds the bf16 logits; the question asks one fp32 chunk."),
            ),
        ]
    return out + compounds(answer, out)


def build(variant: str, params: dict[str, Any]) -> Draft:
    name, s, b, ask, chunks = params["case"]
    model = decoder(name)
    inputs: dict[str, Any] = {
        "kind": "lm-head-logits",
        "model": name,
        "vocab": model.vocab,
        "hidden": model.hidden,
        "layers": model.layers,
        "batch": b,
        "seq": s,
        "ask": ask,
        "chunks": chunks,
    }
    answer = logits_bytes(inputs)
    tokens = b * s // (chunks if ask == "chunk" else 1)
    values: dict[str, Localized | str] = {
        "tokens": Number(tokens),
        "V": Number(model.vocab),
        "answer": ANSWER,
    }
    last: Localized = {
        "logits": Text("In bf16, 2 bytes each: {tokens} × {V} × 2 bytes = {answer}.", **values),
        "fp32-copy": Text(
            "The fp32 copy, 4 bytes each: {tokens} × {V} × 4 bytes = {answer}.", **values
        ),
        "upcast-peak": Text(
            "At the upcast the bf16 logits and their fp32 copy live together, 2 + 4 bytes "
            "each: {tokens} × {V} × 6 bytes = {answer}.",
            **values,
        ),
        "chunk": Text(
            "One fp32 chunk of {tokens} tokens, 4 bytes each: {tokens} × {V} × 4 bytes = {answer}.",
            **values,
        ),
    }[ask]
    steps = (
        Text(
            "The logits are one row of V = {V} values per token: {tokens} tokens × {V}.",
            V=Number(model.vocab),
            tokens=Number(b * s),
        ),
        last,
    )
    prompt = PROMPT.fill(
        model=name,
        V=Number(model.vocab),
        h=model.hidden,
        b=b,
        s=Number(s),
        question=_question(ask, chunks),
    )
    return make_draft(
        "activation-memory",
        2 if ask in ("logits", "fp32-copy") else 3,
        inputs,
        prompt,
        steps,
        answer,
        _candidates(inputs, answer),
        (
            "https://github.com/huggingface/transformers/blob/main/src/transformers/loss/loss_utils.py",
            "https://pytorch.org/torchtune/stable/generated/torchtune.modules.loss.CEWithChunkedOutputLoss.html",
            "https://arxiv.org/abs/2410.10989",
        ),
    )


FAMILY = formula_family(
    id="lm-head-logits",
    topic="activation-memory",
    difficulty=(2, 3),
    description=(
        "LM-head logits of a published model (b × s × V): in bf16, their fp32 copy in the "
        "loss, both at the upcast, or one chunk of a chunked cross-entropy"
    ),
    space=SPACE,
    build=build,
)
