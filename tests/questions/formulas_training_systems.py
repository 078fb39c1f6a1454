"""Formulas behind the computed questions on attention, parallelism, library workspaces and DDP.

Each takes a question's `inputs:` mapping and returns the answer as it is written in the
English correct choice ("342.0 MiB"); test_bank_content.py looks the formula up by the
`kind` key. The sources are cited per formula; test_bank_training_systems.py checks the
formulas against the numbers those sources state.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

UNIT_BYTES = {"MiB": 1024**2, "GiB": 1024**3, "GB": 10**9}


def format_bytes(value: float, inputs: Mapping[str, Any]) -> str:
    """`value` bytes in the question's unit, with its number of decimals ("16.0 GiB")."""
    unit = inputs["unit"]
    return f"{value / UNIT_BYTES[unit]:.{inputs['decimals']}f} {unit}"


def attention_scores_bytes(i: Mapping[str, Any]) -> str:
    """Naive attention's QKᵀ tensor: [batch, heads, seq, seq] elements."""
    return format_bytes(i["batch"] * i["heads"] * i["seq"] ** 2 * i["dtype_bytes"], i)


def attention_core_bytes(i: Mapping[str, Any]) -> str:
    """5·a·s²·b bytes per layer (softmax 2, dropout mask 1, dropout output 2; arXiv 2205.05198)."""
    return format_bytes(5 * i["heads"] * i["seq"] ** 2 * i["batch"] * i["layers"], i)


def megatron_layer_activation(
    seq: int,
    batch: int,
    hidden: int,
    heads: int,
    tp: int = 1,
    sequence_parallel: bool = False,
    selective_recompute: bool = False,
) -> float:
    """Activation bytes of one transformer layer, Korthikanti et al. 2022 (arXiv 2205.05198).

    sbh(34 + 5as/h) without parallelism; tensor parallelism leaves the 10sbh of layer-norm
    inputs, first-linear inputs and dropout masks undivided unless sequence parallelism
    splits them; selective recomputation drops the 5as/h attention core.
    """
    replicated = 10 / tp if sequence_parallel else 10
    attention_core = 0 if selective_recompute else 5 * heads * seq / (hidden * tp)
    return seq * batch * hidden * (replicated + 24 / tp + attention_core)


def megatron_layer_activation_bytes(i: Mapping[str, Any]) -> str:
    value = megatron_layer_activation(
        i["seq"],
        i["batch"],
        i["hidden"],
        i["heads"],
        i["tp"],
        i["sequence_parallel"],
        i["selective_recompute"],
    )
    return format_bytes(value, i)


def micro_batches_in_flight(schedule: str, stages: int, microbatches: int, stage: int) -> int:
    """Micro-batches whose activations a pipeline stage (1-based) holds at its peak.

    GPipe runs all forwards before any backward; 1F1B (PipeDream-Flush) runs p - i warm-up
    forwards on stage i, so it holds at most p - i + 1 (Narayanan et al. 2021, arXiv 2104.04473).
    """
    if schedule == "gpipe":
        return microbatches
    if schedule == "1f1b":
        return min(stages - stage + 1, microbatches)
    raise AssertionError(f"unknown pipeline schedule {schedule!r}; use gpipe or 1f1b")


def pipeline_stashed_activation_bytes(i: Mapping[str, Any]) -> str:
    count = micro_batches_in_flight(i["schedule"], i["stages"], i["microbatches"], i["stage"])
    return format_bytes(count * i["microbatch_gib"] * UNIT_BYTES["GiB"], i)


def cublas_workspace_size(config: str) -> int:
    """Bytes of one workspace for CUBLAS_WORKSPACE_CONFIG=:SIZE_KiB:COUNT[:SIZE:COUNT...].

    PyTorch's CUDA notes: ":4096:2:16:8" is 2 * 4096 + 8 * 16 KiB; PyTorch allocates one
    workspace per cuBLAS handle and stream pair (CublasHandlePool.cpp).
    """
    pairs = re.findall(r":(\d+):(\d+)", config)
    if not pairs:
        raise AssertionError(f"CUBLAS_WORKSPACE_CONFIG {config!r} has no :SIZE:COUNT pair")
    return sum(int(size) * 1024 * int(count) for size, count in pairs)


def cublas_workspace_bytes(i: Mapping[str, Any]) -> str:
    return format_bytes(cublas_workspace_size(i["config"]) * i["streams"], i)


def ddp_bucket_bytes(i: Mapping[str, Any]) -> str:
    """DDP's buckets hold every gradient once, in the gradients' dtype."""
    return format_bytes(i["params"] * i["grad_bytes"], i)


TRAINING_SYSTEMS_FORMULAS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "attention-scores-bytes": attention_scores_bytes,
    "attention-core-bytes": attention_core_bytes,
    "megatron-layer-activation-bytes": megatron_layer_activation_bytes,
    "pipeline-stashed-activation-bytes": pipeline_stashed_activation_bytes,
    "cublas-workspace-bytes": cublas_workspace_bytes,
    "ddp-bucket-bytes": ddp_bucket_bytes,
}
