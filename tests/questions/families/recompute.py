"""Independent recomputation of a generated question's answer from its `inputs`.

Nothing here imports the families: trace questions are replayed op by op on a fresh
`CachingAllocator` (the test's own loop), formula questions use the formulas as the
papers state them.
"""

from __future__ import annotations

import contextlib
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
    # PagedAttention (arXiv 2309.06180) section 2: a key and a value per layer and token
    per_token = 2 * i["layers"] * i["kv_heads"] * i["head_dim"] * i["dtype_bytes"]
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


def activations(i: Mapping[str, Any]) -> int:
    # Korthikanti et al. (arXiv 2205.05198) eq. 1 and sections 4.1/5: 16-bit activations
    s, b, h, a, layers = i["seq"], i["batch"], i["hidden"], i["heads"], i["layers"]
    assert i["bytes_per_value"] == 2
    per_layer = {
        "none": s * b * h * (34 + 5 * a * s / h),
        "selective": 34 * s * b * h,
        "full": 2 * s * b * h,
    }[i["recompute"]]
    return round(per_layer * layers)


FORMULAS = {
    "kv-cache-size": kv_cache,
    "training-state-per-gpu": training_state,
    "activation-memory": activations,
}


def expected_value(inputs: Mapping[str, Any]) -> float:
    """The answer in bytes (or a count) computed from `inputs` alone."""
    kind = inputs["kind"]
    if kind == "allocator-trace":
        return replay(inputs)
    return FORMULAS[kind](inputs)


def in_unit(value: float, unit: str) -> float:
    return value if unit == "count" else value / UNIT_BYTES[unit]
