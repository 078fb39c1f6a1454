"""Independent recomputation of a generated question's answer from its `inputs`.

Nothing here imports the families: trace questions are replayed op by op on a fresh
`CachingAllocator` (the test's own loop), formula questions use the formulas as the
papers and sources state them, from the numbers `inputs` carries.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from typing import Any

from gpu_runner.sim import Block, CachingAllocator, OutOfMemoryError

UNIT_BYTES = {"bytes": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


def replay(inputs: Mapping[str, Any]) -> int:
    """memory_stats()[ask] after the trace; an OOM is caught and the trace goes on."""
    alloc = CachingAllocator(inputs["total_memory"], conf=inputs["conf"])
    if inputs["memory_fraction"] is not None:
        alloc.set_per_process_memory_fraction(inputs["memory_fraction"])
    live: dict[str, Block] = {}
    for op in inputs["ops"]:
        if op[0] == "malloc":
            with contextlib.suppress(OutOfMemoryError):
                live[op[1]] = alloc.malloc(op[2])
        elif op[0] == "free":
            alloc.free(live.pop(op[1]))
        else:
            assert op == ["empty_cache"], op
            alloc.empty_cache()
    return alloc.memory_stats()[inputs["ask"]]


def kv_cache(i: Mapping[str, Any]) -> int:
    # PagedAttention (arXiv 2309.06180) section 2: a key and a value per layer and token;
    # vLLM keeps max(1, KV heads // TP) heads per GPU (ModelConfig.get_num_kv_heads)
    heads = max(1, i["kv_heads"] // i["tensor_parallel"])
    per_token = 2 * i["layers"] * heads * i["head_dim"] * i["dtype_bytes"]
    return int(per_token * i["tokens"] * i["batch"])


def training_state(i: Mapping[str, Any]) -> float:
    # ZeRO (arXiv 1910.02054) section 5: P_os shards K, P_os+g also gradients, P_os+g+p all
    psi, n = i["params"], i["gpus"]
    w, g, k = i["weight_bytes"], i["grad_bytes"], i["optimizer_bytes"]
    per_stage = {
        0: (w + g + k) * psi,
        1: (w + g) * psi + k * psi / n,
        2: w * psi + (g + k) * psi / n,
        3: (w + g + k) * psi / n,
    }
    return float(per_stage[i["stage"]])


def activations(i: Mapping[str, Any]) -> float:
    # Korthikanti et al. (arXiv 2205.05198) Table 2, 16-bit activations, per layer
    s, b, h, a, layers = i["seq"], i["batch"], i["hidden"], i["heads"], i["layers"]
    t, sp = i["tensor_parallel"], i["sequence_parallel"]
    assert i["bytes_per_value"] == 2
    if i["recompute"] == "full":
        per_layer = 2 * s * b * h
    elif i["recompute"] == "selective":
        per_layer = s * b * h * (34 / t if sp else 10 + 24 / t)
    elif sp:
        per_layer = s * b * h * (34 / t + 5 * a * s / (h * t))
    else:
        per_layer = s * b * h * (10 + 24 / t + 5 * a * s / (h * t))
    return per_layer * layers


def lm_head(i: Mapping[str, Any]) -> int:
    # [b, s, V] logits: bf16 (2 B), their fp32 copy (4 B), both (6 B), or one fp32 chunk
    # of b x s / n tokens (torchtune CEWithChunkedOutputLoss)
    tokens = i["batch"] * i["seq"]
    if i["ask"] == "chunk":
        return tokens // i["chunks"] * i["vocab"] * 4
    return tokens * i["vocab"] * {"logits": 2, "fp32-copy": 4, "upcast-peak": 6}[i["ask"]]


def autocast_cache(i: Mapping[str, Any]) -> int:
    # aten/src/ATen/autocast_mode.cpp cached_cast: casts of fp32 leaves requiring grad are
    # kept; 2 bytes each (bf16/fp16). The weights' own storage: fp32, or a bf16 base with
    # fp32 adapters (PEFT's autocast_adapter_dtype).
    h, q, kv, ffn, layers = i["hidden"], i["q_dim"], i["kv_dim"], i["ffn"], i["layers"]
    projections = [(h, q), (h, kv), (h, kv), (q, h)]
    mlp = [(h, ffn), (h, ffn), (ffn, h)]
    adapted = {"qv": [(h, q), (h, kv)], "attention": projections, "all": projections + mlp}
    adapters = 0
    if i["mode"] == "lora":
        adapters = layers * sum(i["rank"] * (a + c) for a, c in adapted[i["targets"]])
    linear = layers * sum(a * c for a, c in projections + mlp) + i["vocab"] * h
    cache = 2 * adapters if i["mode"] == "lora" else 2 * linear
    if i["ask"] == "cache":
        return cache
    params = (
        linear
        + (0 if i["tied"] else i["vocab"] * h)  # the input embedding
        + h * (2 * layers + 1)  # RMSNorm weights
        + (layers * (q + 2 * kv) if i["qkv_bias"] else 0)
    )
    storage = 2 * params + 4 * adapters if i["mode"] == "lora" else 4 * params
    return storage + cache


def moe(i: Mapping[str, Any]) -> int:
    # Megatron-core get_capacity(num_tokens * topk, num_experts, capacity_factor)
    if i["ask"] == "weights":
        local = i["experts"] // i["ep"]
        return local * 3 * i["hidden"] * i["expert_ffn"] * 2 * i["moe_layers"]
    tokens = i["batch"] * i["seq"]
    capacity = math.ceil(tokens * i["top_k"] / i["experts"] * i["capacity_factor"])
    if i["ask"] == "capacity":
        return capacity
    return i["experts"] * capacity * i["hidden"] * 2


def chunked_prefill(i: Mapping[str, Any]) -> int:
    # vLLM V1 Scheduler.schedule: decodes first (1 token each), then the prompt gets the
    # rest of max_num_batched_tokens; KV in 16-token blocks of every layer's K and V
    chunk = min(i["prompt"], i["budget"] - i["decodes"])
    block_bytes = 2 * 16 * i["kv_heads"] * i["head_dim"] * 2 * i["layers"]
    return {
        "first-chunk": chunk,
        "steps": math.ceil(i["prompt"] / chunk),
        "blocks-after-first": math.ceil(chunk / 16),
        "bytes-after-first": math.ceil(chunk / 16) * block_bytes,
        "bytes-at-end": math.ceil(i["prompt"] / 16) * block_bytes,
    }[i["ask"]]


FORMULAS = {
    "kv-cache-size": kv_cache,
    "training-state-per-gpu": training_state,
    "activation-memory": activations,
    "lm-head-logits": lm_head,
    "autocast-cache": autocast_cache,
    "moe-expert-parallel": moe,
    "kv-chunked-prefill": chunked_prefill,
}


def expected_value(inputs: Mapping[str, Any]) -> float:
    """The answer in bytes (or a count) computed from `inputs` alone."""
    kind = inputs["kind"]
    if kind == "allocator-trace":
        return replay(inputs)
    return FORMULAS[kind](inputs)


def in_unit(value: float, unit: str) -> float:
    return value if unit == "count" else value / UNIT_BYTES[unit]
