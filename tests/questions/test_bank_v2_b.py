"""Bank v2 questions on optimizer memory, model loading, leaks, KV serving, profiling, MIG/MPS.

Their computed answers are recomputed in test_bank_content.py (the formulas live in
formulas_v2_b.py); this file checks those formulas against the numbers their sources publish
(the area's shared checks: test_bank_areas.py).
"""

from __future__ import annotations

from tests.questions.formulas_v2_b import (
    load_peak_bytes,
    mig_max_instances,
    mla_kv_bytes,
    optimizer_state_bytes,
    optimizer_step_peak_bytes,
    prefix_cached_blocks,
)

GB = {"unit": "GB", "decimals": 1}


def test_step_peak_reproduces_the_optimizer_in_backward_tutorial() -> None:
    # ViT-L: ~1.2 GB of fp32 parameters; Adam with foreach peaks at ~6 GB in step().
    vit_l = {"params": 300_000_000, "param_bytes": 4, "grad_bytes": 4, "states": 2}
    peak = optimizer_step_peak_bytes({**vit_l, "state_bytes": 4, "temp_copies": 1, **GB})
    assert peak == "6.0 GB"
    # foreach=False: the temporaries shrink to one parameter's worth (~0 at this scale).
    no_foreach = optimizer_step_peak_bytes({**vit_l, "state_bytes": 4, "temp_copies": 0, **GB})
    assert no_foreach == "4.8 GB"


def test_eight_bit_states_save_the_advertised_75_percent() -> None:
    fp32 = optimizer_state_bytes({"params": 10**9, "states": 2, "state_bytes": 4, **GB})
    int8 = optimizer_state_bytes({"params": 10**9, "states": 2, "state_bytes": 1, **GB})
    assert (fp32, int8) == ("8.0 GB", "2.0 GB")


def test_plain_load_holds_twice_the_weights() -> None:
    # The loading tutorial: the built model and the loaded state dict coexist.
    one = load_peak_bytes({"params": 10**9, "dtype_bytes": 2, "copies": 1, **GB})
    two = load_peak_bytes({"params": 10**9, "dtype_bytes": 2, "copies": 2, **GB})
    assert (one, two) == ("2.0 GB", "4.0 GB")


def test_mla_cache_matches_deepseek_v2_gqa_equivalence() -> None:
    # DeepSeek-V2, Table 1: MLA caches (d_c + d_h^R) = 4.5 d_h elements per token and layer,
    # like GQA with 2.25 groups (2 x 2.25 x d_h); with d_h = 128 that is 576 elements.
    per_layer = mla_kv_bytes(
        {"layers": 1, "kv_lora_rank": 512, "rope_dim": 64, "dtype_bytes": 1, "tokens": 1}
        | {"unit": "KiB", "decimals": 3}
    )
    assert per_layer == f"{2 * 2.25 * 128 / 1024:.3f} KiB"


def test_prefix_blocks_reproduce_the_vllm_design_example() -> None:
    # docs/design/prefix_caching.md: block size 4, 10 shared prompt tokens -> 2 blocks (8 tokens).
    assert prefix_cached_blocks({"shared_tokens": 10, "block_size": 4}) == "2 blocks (8 tokens)"
    assert prefix_cached_blocks({"shared_tokens": 3, "block_size": 4}) == "0 blocks (0 tokens)"


def test_mig_profiles_are_bounded_by_compute_and_memory_slices() -> None:
    a100 = {"compute_slices": 7, "memory_slices": 8}
    # MIG user guide, A100: 1g.10gb x7, 2g.20gb x3, 3g.40gb (3 compute, 4 memory slices) x2.
    profiles = [(1, 1, "7"), (2, 2, "3"), (3, 4, "2"), (7, 8, "1")]
    for compute, memory, count in profiles:
        inputs = {**a100, "profile_compute_slices": compute, "profile_memory_slices": memory}
        assert mig_max_instances(inputs) == count, (compute, memory)
