"""Formulas behind the computed questions of bank v3 (LM head, autocast, MoE, context
parallelism, FSDP2, fp8 training, chunked prefill).

Each takes a question's `inputs` and returns the text its correct English choice must contain;
test_bank_content.py merges them into its FORMULAS table, test_bank_v3.py checks them against
the numbers their sources publish.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

UNITS = {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "GB": 10**9}


def _in_unit(value: float, i: Mapping[str, Any]) -> str:
    return f"{value / UNITS[i['unit']]:.{i['decimals']}f} {i['unit']}"


def logits_bytes(i: Mapping[str, Any]) -> str:
    """The LM head's output: one value per token and vocabulary entry."""
    return _in_unit(i["tokens"] * i["vocab"] * i["dtype_bytes"], i)


def flce_chunk(tokens: int, hidden: int, vocab: int, chunk_mem_const: int = 1) -> int:
    """Tokens per chunk of Liger-Kernel's fused linear cross-entropy.

    fused_linear_cross_entropy_forward: inc_factor = ceil(V / (c * H)), chunk_size =
    next_power_of_2(ceil(BT / inc_factor)), at most BT, so one chunk's logits are about c * BT * H.
    """
    inc_factor = math.ceil(vocab / (chunk_mem_const * hidden))
    per_chunk = math.ceil(tokens / inc_factor)
    return min(1 << (per_chunk - 1).bit_length(), tokens)


def flce_chunk_tokens(i: Mapping[str, Any]) -> str:
    return f"{flce_chunk(i['tokens'], i['hidden'], i['vocab'])} tokens"


def autocast_weight_bytes(i: Mapping[str, Any]) -> str:
    """fp32 weights plus the low-precision casts autocast caches for every parameter used."""
    return _in_unit(i["params"] * (i["weight_bytes"] + i["cast_bytes"]), i)


FORMULAS_V3: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "logits-bytes": logits_bytes,
    "flce-chunk-tokens": flce_chunk_tokens,
    "autocast-weight-bytes": autocast_weight_bytes,
}
