"""Each demo's rule-determined figures (spec §3) on the CPU paths.

The allocator demos drive the simulator in-process; a GPU run must give the same numbers
(tests/runner/test_gpu.py). Demos that need torch run in the executor's child, so this
process never imports torch; they are skipped where torch is not installed.
"""

from __future__ import annotations

from typing import Any

import pytest

from bot.domain import DemoJob, DemoState, Locale
from bot.errors import MissingExtraError
from gpu_runner.demos import DemoKind, DemoOutput, RunContext, default_registry
from gpu_runner.executor import Executor

MiB = 1 << 20
REGISTRY = default_registry()


def through(executor: Executor, demo: str, **params: object) -> dict[str, Any]:
    """Torch-using demos run in the executor's child: torch stays out of this process."""
    if executor.info.torch is None:
        pytest.skip("needs torch (pip install 'quizbot[gpu]')")
    result = executor.run(DemoJob(1, demo, Locale.EN, params, simulate=True))
    assert result.state is DemoState.SUCCEEDED, result.error
    return dict(result.metrics)


def run(demo: str, locale: Locale = Locale.EN, torch: Any = None, **params: object) -> DemoOutput:
    checked = REGISTRY.check(demo, params)
    return REGISTRY[demo].run(RunContext(demo, locale, checked, torch=torch))


def test_fragmentation_leaves_eight_50_mib_holes_with_index_0_875() -> None:
    m = run("fragmentation").metrics
    assert m["allocated_bytes"] == 400 * MiB
    assert m["reserved_bytes"] == 800 * MiB
    assert m["segments"] == 1
    assert m["inactive_split_bytes"] == 400 * MiB
    assert m["free_blocks"] == 8
    assert m["total_free_bytes"] == 400 * MiB
    assert m["largest_free_bytes"] == 50 * MiB
    assert m["fragmentation_index"] == 0.875
    assert m["simulated"] is True


def test_reserved_vs_allocated_matches_the_byte_table() -> None:
    m = run("reserved-vs-allocated").metrics
    table = [
        (
            s["block_bytes"],
            s["requested_bytes"],
            s["allocated_bytes"],
            s["reserved_bytes"],
            s["inactive_split_bytes"],
        )
        for s in m["steps"]
    ]
    assert table == [
        (512, 1, 512, 2_097_152, 2_096_640),
        (1024, 1_001, 1_536, 2_097_152, 2_095_616),
        (1_049_088, 1_049_578, 1_050_624, 23_068_672, 22_018_048),
        (5_242_880, 6_292_458, 6_293_504, 23_068_672, 16_775_168),
        (104_858_112, 111_150_059, 111_151_616, 130_023_424, 18_871_808),
        (536_870_912, 648_020_971, 648_022_528, 666_894_336, 18_871_808),
    ]
    assert m["after_free"] == {"allocated_bytes": 0, "reserved_bytes": 666_894_336, "segments": 4}
    assert m["after_empty_cache"] == {"allocated_bytes": 0, "reserved_bytes": 0}


def test_oom_inactive_split_fails_with_one_retry_then_recovers_from_the_cache() -> None:
    m = run("oom-inactive-split").metrics
    at = m["at_oom"]
    assert at["oom"] is True
    assert (at["num_alloc_retries"], at["num_ooms"]) == (1, 1)
    assert at["inactive_split_bytes"] == 400 * MiB
    assert at["segments"] == 1
    assert at["largest_free_bytes"] == 50 * MiB
    message = m["oom_message"]
    assert "Tried to allocate 300.00 MiB" in message
    assert "1.00 GiB allowed;" in message
    assert (
        "400.00 MiB is allocated by PyTorch, and 400.00 MiB is reserved by PyTorch but unallocated"
    ) in message
    assert m["reserved_after_empty_cache_with_live_tensors"] == 800 * MiB
    assert m["after_freeing_live_tensors"] == {
        "allocated_bytes": 0,
        "reserved_bytes": 800 * MiB,
        "inactive_split_bytes": 0,
    }
    assert m["retry"]["new_device_allocs"] == 0
    assert m["retry"]["reserved_after_empty_cache"] == 800 * MiB


def test_oom_inactive_split_small_request_fits_a_hole() -> None:
    assert run("oom-inactive-split", request_mib=40).metrics["at_oom"]["oom"] is False


def test_expandable_segments_avoid_the_native_oom() -> None:
    m = run("expandable-segments").metrics
    native, exp = m["native"], m["expandable"]
    assert (native["ooms"], native["oom_at"], native["num_alloc_retries"]) == (1, [[16, 14]], 3)
    assert native["peak_reserved_bytes"] == 702 * MiB
    assert (exp["ooms"], exp["num_alloc_retries"]) == (0, 0)
    assert exp["peak_reserved_bytes"] == 620 * MiB
    assert round(exp["peak_allocated_bytes"] / MiB, 2) == 608.07
    assert native["uncapped_peak_reserved_bytes"] == 1046 * MiB
    assert exp["uncapped_peak_reserved_bytes"] == 620 * MiB
    assert native["q3_layout"]["succeeded"] is False
    assert exp["q3_layout"] == {
        "succeeded": True,
        "reserved_bytes": 780 * MiB,
        "num_device_free": 8,
        "num_alloc_retries": 1,
    }
    assert native["shrink_grow"]["reserved_after"] == 256 * MiB
    assert exp["shrink_grow"]["reserved_after"] == 140 * MiB


def test_empty_cache_does_not_free_a_block_a_view_still_uses() -> None:
    m = run("empty-cache-live-tensor").metrics
    steps = [(s["allocated_bytes"] // MiB, s["reserved_bytes"] // MiB) for s in m["view"]]
    assert steps == [(1024, 1024), (1024, 1024), (0, 1024), (0, 0)]
    assert m["view"][2]["device_free_delta_bytes"] == -1024 * MiB
    assert m["view"][3]["device_free_delta_bytes"] == 0
    shared = [
        (s["reserved_bytes"] // MiB, s["inactive_split_bytes"] // MiB) for s in m["shared_segment"]
    ]
    assert shared[1:] == [(20, 16), (0, 0)]


def test_caching_allocator_needs_one_cudamalloc_for_a_thousand_tensors() -> None:
    m = run("caching-allocator").metrics
    assert m["cached"]["device_allocs"] == 1
    assert m["cached"]["device_frees"] == 0
    assert m["cached"]["reserved_bytes"] == 64 * MiB
    assert (m["uncached"]["device_allocs"], m["uncached"]["device_frees"]) == (1000, 1000)


def test_view_keeps_storage_allocator_figures() -> None:
    m = run("view-keeps-storage").metrics
    steps = [(s["allocated_bytes"], s["reserved_bytes"]) for s in m["allocator"]]
    assert steps == [(64 * MiB, 64 * MiB), (64 * MiB, 64 * MiB), (1024, 66 * MiB), (1024, 2 * MiB)]
    assert m["cpu_storage"] is None  # no torch given


def test_view_keeps_storage_on_cpu_torch(executor: Executor) -> None:
    cpu = through(executor, "view-keeps-storage")["cpu_storage"]
    assert cpu == {
        "slice_storage_bytes": 64 * MiB,
        "base_freed_after_del": False,
        "clone_storage_bytes": 1024,
        "base_freed_after_clone": True,
    }


def test_cuda_graph_pool_model_keeps_the_private_pool_until_the_graph_goes() -> None:
    m = run("cuda-graph-pool").metrics
    pools = [s["private_pool_bytes"] // MiB for s in m["steps"]]
    reserved = [s["reserved_bytes"] // MiB for s in m["steps"]]
    assert pools == [0, 192, 192, 192, 0]
    assert reserved == [64, 256, 256, 320, 128]
    assert m["simulated"] is True


def test_paged_attention_arithmetic() -> None:
    m = run("paged-attention").metrics
    assert m["kv_bytes_per_token"] == {"opt-13b": 800 * 1024, "llama-3-8b": 128 * 1024}
    assert m["budget_slots"] == 15_728
    assert m["max_len_sequences_in_budget"] == 7
    u = {k: v["utilization"] for k, v in m["schemes"].items()}
    assert u["max"] < u["pow2"] < u["exact"] < u["paged"]
    assert u["paged"] > 0.95
    assert m["paged_last_block_waste_slots"] < 16 * m["requests"]
    assert abs(m["mean_prompt"] - 161) < 5 and abs(m["mean_output"] - 338) < 10
    assert m["attention_check"] is None


def test_paged_attention_matches_contiguous_attention_on_cpu(executor: Executor) -> None:
    check = through(executor, "paged-attention")["attention_check"]
    assert check["match"] is True
    assert check["pool_bytes"] < check["contiguous_max_len_bytes"]


def test_adam_costs_16_bytes_per_parameter_in_mixed_precision() -> None:
    m = run("adam-memory-breakdown").metrics
    assert m["bytes_per_parameter"] == {
        "fp32": 16,
        "mixed (bf16 + fp32 master)": 16,
        "bf16, no master": 12,
    }
    assert m["total_bytes"]["fp32"] == 16 * 7_000_000_000


def test_adam_state_measured_with_torch(executor: Executor) -> None:
    measured = through(executor, "adam-memory-breakdown")["measured"]
    assert measured["bytes_per_parameter"] == 16.0
    assert measured["adam_moments_bytes"] == 8 * measured["parameters"]


def test_pinned_vs_pageable_without_a_gpu_is_labelled_and_measures_nothing() -> None:
    out = run("pinned-vs-pageable")
    assert out.metrics["copies"] is None
    assert out.metrics["pin_memory_available"] is False
    assert "n/a" in out.report
    assert out.simulated


def test_activation_checkpointing_small_config_live_bytes(executor: Executor) -> None:
    m = through(executor, "activation-checkpointing")
    after = {k: v["after_forward_bytes"] // MiB for k, v in m["modes"].items()}
    assert after == {"none": 128, "per-layer": 64, "sqrt": 44}  # spec Q6, small config
    peak = {k: v["peak_bytes"] / MiB for k, v in m["modes"].items()}
    # Peaks of this tracker with `out.sum().backward()` (see docs/runner.md on the spec's
    # 144 / 80 / 84): activations plus the weight gradients accumulated so far.
    assert {k: round(v) for k, v in peak.items()} == {"none": 136, "per-layer": 76, "sqrt": 88}
    big = m["spec_config_meta"]["modes"]
    gib = {k: v["after_forward_bytes"] / (1 << 30) for k, v in big.items()}
    assert gib == {"none": 6.0, "per-layer": 3.0, "sqrt": 2.5}  # + 0.125 GiB input = spec


def test_activation_checkpointing_real_cpu_tensors_agree_with_meta_accounting(
    executor: Executor,
) -> None:
    size = {"layers": 4, "width": 256, "batch": 64}
    real = through(executor, "activation-checkpointing", **size, cpu_tensors=1)
    meta = through(executor, "activation-checkpointing", **size)
    assert real["config"]["device"] == "cpu" and meta["config"]["device"] == "meta"
    assert real["modes"] == {
        mode: {**values, "step_s": real["modes"][mode]["step_s"]}
        for mode, values in meta["modes"].items()
    }


def test_activation_checkpointing_without_torch_names_the_install_command() -> None:
    with pytest.raises(MissingExtraError, match=r"pip install 'quizbot\[gpu\]'"):
        run("activation-checkpointing")


@pytest.mark.parametrize(
    "demo", [d for d in REGISTRY.ids() if REGISTRY[d].kind is not DemoKind.TORCH]
)
def test_greek_report_is_greek_with_the_same_figures(demo: str) -> None:
    en = run(demo, Locale.EN)
    el = run(demo, Locale.EL)
    assert en.report != el.report
    assert any("\u0370" <= ch <= "\u03ff" for ch in el.report)  # Greek letters
    assert en.metrics == el.metrics
    assert el.png is not None and el.png.startswith(b"\x89PNG")


def test_activation_checkpointing_report_in_greek(executor: Executor) -> None:
    if executor.info.torch is None:
        pytest.skip("needs torch")
    result = executor.run(DemoJob(1, "activation-checkpointing", Locale.EL, simulate=True))
    assert "μετά το forward" in result.report
    assert "checkpoint" in result.report
