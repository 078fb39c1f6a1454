"""Family `kv-cache-size`: KV-cache bytes of a decoder for a batch of sequences.

bytes = 2 (key and value) × layers × KV heads × head dim × bytes per value × tokens × batch
(PagedAttention paper, section 2; with grouped-query attention only the KV heads count).
"""

from __future__ import annotations

from typing import Any

from bot.domain import Locale
from questions.families.assemble import ANSWER
from questions.families.model import Candidate, Draft, Family, Style, Text
from questions.families.space import Space, grid
from questions.families.units import format_number

DTYPES = {"fp16": 2, "bf16": 2, "fp8": 1, "fp32": 4}
SPACE = Space(
    (
        grid(
            "decoder",
            layers=(24, 28, 32, 40, 48, 60, 64, 80),
            heads=(
                (32, 32),
                (32, 8),
                (32, 4),
                (40, 40),
                (40, 8),
                (64, 8),
                (48, 8),
                (16, 16),
                (64, 64),
                (32, 1),
                (56, 8),
                (96, 8),
            ),
            head_dim=(64, 80, 96, 128),
            dtype=tuple(DTYPES),
            batch=(1, 2, 4, 8, 16, 32, 64),
            tokens=(512, 1024, 2048, 4096, 8192, 16384, 32768, 131072),
        ),
    )
)
PROMPT = Text(
    "A decoder with {L} layers, {q} query heads and {kv} key-value heads of dimension {d} "
    "keeps its KV cache in {dtype}. How much memory does the cache take for {batch}?",
    "Ένας decoder με {L} επίπεδα, {q} query heads και {kv} KV heads διάστασης {d} κρατά την "
    "KV cache σε {dtype}. Πόση μνήμη καταλαμβάνει η cache για {batch};",
)
ONE_SEQUENCE = Text("one sequence of {t} tokens", "μία ακολουθία {t} tokens")
SEQUENCES = Text("{b} sequences of {t} tokens each", "{b} ακολουθίες των {t} tokens η καθεμία")


def num(value: int) -> Text:
    return Text(format_number(value, 0, Locale.EN), format_number(value, 0, Locale.EL))


def kv_cache_bytes(inputs: dict[str, Any]) -> int:
    return int(
        2
        * inputs["layers"]
        * inputs["kv_heads"]
        * inputs["head_dim"]
        * inputs["dtype_bytes"]
        * inputs["tokens"]
        * inputs["batch"]
    )


def _candidates(i: dict[str, Any], answer: int) -> list[Candidate]:
    out = [
        Candidate(
            "keys-only",
            answer // 2,
            Text(
                "that counts keys only; values are cached too.",
                "μετρά μόνο τα κλειδιά· αποθηκεύονται και οι τιμές.",
            ),
        )
    ]
    if i["q_heads"] != i["kv_heads"]:
        out.append(
            Candidate(
                "query-heads-cached",
                answer * i["q_heads"] // i["kv_heads"],
                Text(
                    "that uses the {q} query heads; only the {kv} KV heads are cached.",
                    "χρησιμοποιεί τα {q} query heads· αποθηκεύονται μόνο τα {kv} KV heads.",
                ).fill(q=str(i["q_heads"]), kv=str(i["kv_heads"])),
            )
        )
    wrong = 4 if i["dtype_bytes"] < 4 else 2
    out.append(
        Candidate(
            "wrong-bytes-per-value",
            answer * wrong // i["dtype_bytes"],
            Text(
                "that takes {w} bytes per value; {dtype} has {b}.",
                "παίρνει {w} bytes ανά τιμή· το {dtype} έχει {b}.",
            ).fill(w=str(wrong), dtype=i["dtype"], b=str(i["dtype_bytes"])),
        )
    )
    if i["batch"] > 1:
        out.append(
            Candidate(
                "batch-forgotten",
                answer // i["batch"],
                Text(
                    "that is one sequence; each of the {b} has its own cache.",
                    "είναι μία ακολουθία· καθεμία από τις {b} έχει δική της cache.",
                ).fill(b=str(i["batch"])),
            )
        )
    out.append(
        Candidate(
            "one-layer-only",
            answer // i["layers"],
            Text(
                "that is one layer; every layer caches its own keys and values.",
                "είναι ένα επίπεδο· κάθε επίπεδο κρατά τα δικά του κλειδιά και τιμές.",
            ),
        )
    )
    return out


def build(variant: str, params: dict[str, Any]) -> Draft:
    q_heads, kv_heads = params["heads"]
    inputs: dict[str, Any] = {
        "kind": "kv-cache-size",
        "layers": params["layers"],
        "q_heads": q_heads,
        "kv_heads": kv_heads,
        "head_dim": params["head_dim"],
        "dtype": params["dtype"],
        "dtype_bytes": DTYPES[str(params["dtype"])],
        "batch": params["batch"],
        "tokens": params["tokens"],
    }
    answer = kv_cache_bytes(inputs)
    batch = (ONE_SEQUENCE if inputs["batch"] == 1 else SEQUENCES).fill(
        b=str(inputs["batch"]), t=num(inputs["tokens"])
    )
    per_token_layer = 2 * kv_heads * inputs["head_dim"] * inputs["dtype_bytes"]
    steps = (
        Text(
            "Per token and layer the cache holds a key and a value: 2 × {kv} KV heads × {d} × "
            "{B} bytes = {p} bytes.",
            "Ανά token και επίπεδο η cache κρατά ένα κλειδί και μία τιμή: 2 × {kv} KV heads × "
            "{d} × {B} bytes = {p} bytes.",
        ).fill(
            kv=str(kv_heads),
            d=str(inputs["head_dim"]),
            B=str(inputs["dtype_bytes"]),
            p=num(per_token_layer),
        ),
        Text(
            "Times {L} layers and {batch}: {v} bytes = {answer}.",
            "Επί {L} επίπεδα και {batch}: {v} bytes = {answer}.",
        ).fill(L=str(inputs["layers"]), batch=batch, v=num(answer), answer=ANSWER),
    )
    prompt = PROMPT.fill(
        L=str(inputs["layers"]),
        q=str(q_heads),
        kv=str(kv_heads),
        d=str(inputs["head_dim"]),
        dtype=str(inputs["dtype"]),
        batch=batch,
    )
    return Draft(
        topic="kv-cache",
        difficulty=3 if q_heads != kv_heads else 2,
        inputs=inputs,
        prompt=prompt,
        steps=steps,
        answer=answer,
        style=Style.ROUNDED_SIZE,
        candidates=tuple(_candidates(inputs, answer)),
        references=("https://arxiv.org/abs/2309.06180", "https://arxiv.org/abs/2305.13245"),
    )


FAMILY = Family(
    id="kv-cache-size",
    topic="kv-cache",
    kind="formula",
    difficulty=(2, 3),
    description=(
        "KV-cache bytes from layers, query/KV heads, head dim, dtype, batch and sequence "
        "length (grouped-query attention included)"
    ),
    space=SPACE,
    build=build,
)
