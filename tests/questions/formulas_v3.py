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


def moe_capacity(tokens: int, topk: int, experts: int, capacity_factor: float) -> int:
    """Megatron-Core get_capacity(num_tokens * topk, num_experts, capacity_factor): ceil."""
    return math.ceil(tokens * topk / experts * capacity_factor)


def moe_expert_capacity(i: Mapping[str, Any]) -> str:
    cap = moe_capacity(i["tokens"], i["topk"], i["experts"], i["capacity_factor"])
    return f"{cap} token slots"


def moe_dispatch_bytes(i: Mapping[str, Any]) -> str:
    """Dropless alltoall dispatch: the permuted buffer has num_tokens * topk rows."""
    return _in_unit(i["tokens"] * i["topk"] * i["hidden"] * i["dtype_bytes"], i)


def head_tail_chunks(seq: int, cp: int, rank: int) -> list[tuple[int, int]]:
    """_HeadTailLoadBalancer: 2 * cp chunks, rank r holds chunks r and 2 * cp - 1 - r."""
    size = seq // (2 * cp)
    return [(c * size, (c + 1) * size - 1) for c in (rank, 2 * cp - 1 - rank)]


def cp_head_tail_chunks(i: Mapping[str, Any]) -> str:
    return " and ".join(f"{a}-{b}" for a, b in head_tail_chunks(i["seq"], i["cp"], i["rank"]))


def cp_gathered_kv_bytes(i: Mapping[str, Any]) -> str:
    """The all-gather rotater gathers every rank's concatenated K and V shard once."""
    shard = 2 * (i["seq"] // i["cp"]) * i["batch"] * i["kv_heads"] * i["head_dim"]
    return _in_unit(i["cp"] * shard * i["dtype_bytes"], i)


def fsdp2_unsharded_bytes(i: Mapping[str, Any]) -> str:
    """Unsharded parameters of `blocks_held` FSDP2 blocks, in the policy's param_dtype."""
    return _in_unit(i["blocks_held"] * i["block_params"] * i["param_bytes"], i)


def mx_quantized_bytes(i: Mapping[str, Any]) -> str:
    """Block-scaled copies (OCP MX): one value per element plus one scale per `block` values."""
    per_copy = i["rows"] * i["cols"] * (i["value_bytes"] + i["scale_bytes"] / i["block"])
    return _in_unit(i["copies"] * per_copy, i)


def prefill_chunk(budget: int, decodes: int, prompt: int) -> int:
    """vLLM V1 Scheduler.schedule: running requests (one token per decode) take the budget
    first; a waiting prompt gets min(its tokens, what is left)."""
    return max(0, min(prompt, budget - decodes))


def chunked_prefill_chunk(i: Mapping[str, Any]) -> str:
    return f"{prefill_chunk(i['budget'], i['decodes'], i['prompt'])} tokens"


def step_activation_bytes(i: Mapping[str, Any]) -> str:
    """One activation of a step: every scheduled token times the layer's output width."""
    return _in_unit(i["tokens"] * i["width"] * i["dtype_bytes"], i)


FORMULAS_V3: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "logits-bytes": logits_bytes,
    "flce-chunk-tokens": flce_chunk_tokens,
    "autocast-weight-bytes": autocast_weight_bytes,
    "moe-expert-capacity": moe_expert_capacity,
    "moe-dispatch-bytes": moe_dispatch_bytes,
    "cp-head-tail-chunks": cp_head_tail_chunks,
    "cp-gathered-kv-bytes": cp_gathered_kv_bytes,
    "fsdp2-unsharded-bytes": fsdp2_unsharded_bytes,
    "mx-quantized-bytes": mx_quantized_bytes,
    "chunked-prefill-chunk": chunked_prefill_chunk,
    "step-activation-bytes": step_activation_bytes,
}
