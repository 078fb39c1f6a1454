"""Formulas behind the computed questions of bank v2 (optimizer, loading, KV cache, MIG).

Each takes a question's `inputs` and returns the text its correct English choice must contain;
test_bank_content.py merges them into its FORMULAS table, test_bank_v2_b.py checks them against
published numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

UNITS = {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "GB": 10**9}


def _in_unit(value: float, i: Mapping[str, Any]) -> str:
    return f"{value / UNITS[i['unit']]:.{i['decimals']}f} {i['unit']}"


def optimizer_state_bytes(i: Mapping[str, Any]) -> str:
    """Optimizer states alone: `states` tensors per parameter of `state_bytes` each."""
    return _in_unit(i["params"] * i["states"] * i["state_bytes"], i)


def optimizer_step_peak_bytes(i: Mapping[str, Any]) -> str:
    """Live at optimizer.step(): parameters, gradients, states and foreach temporaries.

    The torch.optim docstring puts the foreach temporaries at ~sizeof(params); activations are
    already freed by then.
    """
    per_param = (
        i["param_bytes"]
        + i["grad_bytes"]
        + i["states"] * i["state_bytes"]
        + i["temp_copies"] * i["param_bytes"]
    )
    return _in_unit(i["params"] * per_param, i)


def load_peak_bytes(i: Mapping[str, Any]) -> str:
    """Host memory of `copies` full copies of the weights alive at once while loading."""
    return _in_unit(i["params"] * i["dtype_bytes"] * i["copies"], i)


def mla_kv_bytes(i: Mapping[str, Any]) -> str:
    """Multi-head latent attention caches one latent plus one RoPE key per token and layer."""
    per_token = i["layers"] * (i["kv_lora_rank"] + i["rope_dim"]) * i["dtype_bytes"]
    return _in_unit(per_token * i["tokens"], i)


def prefix_cached_blocks(i: Mapping[str, Any]) -> str:
    """vLLM caches full blocks only, so a shared prefix hits in whole blocks."""
    blocks = i["shared_tokens"] // i["block_size"]
    return f"{blocks} blocks ({blocks * i['block_size']} tokens)"


def mig_max_instances(i: Mapping[str, Any]) -> str:
    """A MIG profile fits as often as both its compute and its memory slices allow."""
    by_compute = i["compute_slices"] // i["profile_compute_slices"]
    by_memory = i["memory_slices"] // i["profile_memory_slices"]
    return str(min(by_compute, by_memory))


FORMULAS_V2_B: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "optimizer-state-bytes": optimizer_state_bytes,
    "optimizer-step-peak-bytes": optimizer_step_peak_bytes,
    "load-peak-bytes": load_peak_bytes,
    "mla-kv-bytes": mla_kv_bytes,
    "prefix-cached-blocks": prefix_cached_blocks,
    "mig-max-instances": mig_max_instances,
}
