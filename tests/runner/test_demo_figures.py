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
from gpu_runner.demos._labels import simulated_label
from gpu_runner.executor import Executor

MiB = 1 << 20
GiB = 1 << 30
REGISTRY = default_registry()


def through(executor: Executor, demo: str, **params: object) -> dict[str, Any]:
    """Torch-using demos run in the executor's child: torch stays out of this process."""
    if executor.info.torch is None:
        pytest.skip("needs torch (pip install 'quizbot[gpu]')")
    result = executor.run(DemoJob(1, demo, Locale.EN, params, simulate=True))
    assert result.state is DemoState.SUCCEEDED, result.error
    return dict(result.metrics)


def run(
    demo: str,
    locale: Locale = Locale.EN,
    torch: Any = None,
    simulate: bool = False,
    png: bool = False,
    **params: object,
) -> DemoOutput:
    """A demo in this process, its plot drawn; encoded as PNG only with `png` (encoding is
    most of a run, and these checks read figures and words)."""
    checked = REGISTRY.check(demo, params)
    ctx = RunContext(demo, locale, checked, simulate=simulate, torch=torch, encode_png=png)
    return REGISTRY[demo].run(ctx)


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
    assert m["outcome"] == "oom"
    at = m["at_request"]
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


def test_oom_inactive_split_remedies_expandable_segments_and_max_split_size() -> None:
    remedies = run("oom-inactive-split").metrics["remedies"]
    exp, split = remedies["expandable_segments"], remedies["max_split_size_mb"]
    # Expandable: the retry unmaps the free pages under the holes (16 pages of 20 MiB) and
    # maps 15 new ones at the end of the range.
    assert (exp["outcome"], exp["num_alloc_retries"]) == ("new-segment", 1)
    assert (exp["released_bytes"], exp["new_device_bytes"]) == (320 * MiB, 300 * MiB)
    assert exp["reserved_bytes"] == 780 * MiB
    # max_split_size_mb: the 800 MiB block stays whole, the tensors get 50 MiB segments of
    # their own and the retry releases the 8 free ones.
    assert (split["outcome"], split["num_alloc_retries"]) == ("new-segment", 1)
    assert (split["released_bytes"], split["reserved_bytes"]) == (400 * MiB, 700 * MiB)


@pytest.mark.parametrize(
    ("request_mib", "outcome", "new_segment_mib"),
    [
        (40, "reused-hole", 0),
        (50, "reused-hole", 0),
        (51, "new-segment", 52),
        (200, "new-segment", 200),
        (224, "new-segment", 224),
        (225, "oom", 0),
        (1, "new-segment", 2),
    ],
)
def test_oom_inactive_split_says_whether_a_request_reused_a_hole_or_took_a_segment(
    request_mib: int, outcome: str, new_segment_mib: int
) -> None:
    out = run("oom-inactive-split", request_mib=request_mib)
    m = out.metrics
    assert (m["outcome"], m["new_segment_bytes"] // MiB) == (outcome, new_segment_mib)
    assert m["room_under_cap_bytes"] == 224 * MiB  # cap 1024 − reserved 800
    assert "cap − reserved = 224 MiB" in out.report or "OOMs 1" in out.report
    if outcome == "new-segment":
        assert "fits a" not in out.report  # the old text claimed a hole for any success
        assert f"new {new_segment_mib} MiB segment" in out.report
    if outcome == "reused-hole":
        assert "fits a free 50 MiB hole" in out.report


def test_oom_inactive_split_simulated_message_is_explained_by_the_note() -> None:
    out = run("oom-inactive-split")
    # 16 GiB, 800 MiB of it reserved: what the note says the simulated device is.
    assert "total capacity of 16.00 GiB of which 15.22 GiB is free" in out.metrics["oom_message"]
    assert "n/a (the simulated device has no CUDA context)" in out.report
    assert out.report.splitlines()[-1] == simulated_label(Locale.EN).note
    assert "The simulated device has 16 GiB (what a demo may use on a GPU)" in out.report


def test_every_simulated_demo_runs_on_the_memory_a_demo_gets_on_a_gpu() -> None:
    # One size for every simulated device (the allocator-trace demo's is the trace's own):
    # the executor's per-demo GPU cap, so a simulated OOM is where a GPU run's would be.
    from gpu_runner.demos._labels import SIM_TOTAL_MEMORY
    from gpu_runner.executor import ExecutorConfig

    assert SIM_TOTAL_MEMORY == ExecutorConfig().gpu_memory_cap == 16 * GiB


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
        "new_device_bytes": 300 * MiB,  # 15 pages of 20 MiB mapped at the end of the range
        "released_bytes": 320 * MiB,
    }
    # The native trace's drops: the two retries that flushed the cache, then the OOM's.
    assert native["retry_steps"] == [80, 112, 141]
    assert exp["retry_steps"] == []
    assert native["shrink_grow"]["reserved_after"] == 256 * MiB
    assert exp["shrink_grow"]["reserved_after"] == 140 * MiB


def test_expandable_segments_report_says_which_pages_moved() -> None:
    report = run("expandable-segments").report
    assert "unmapped and re-mapped" not in report
    assert "mapped 15 new 20 MiB pages at the end of the range" in report
    assert "unmapped 320 MiB of free pages under the holes (8 unmap calls)" in report


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


def test_empty_cache_report_says_what_empty_cache_releases_and_reads_deltas_as_deltas() -> None:
    report = run("empty-cache-live-tensor").report
    assert "nobody uses" not in report  # contradicted by the free 16 MiB block it keeps
    assert "releases only segments whose blocks are all free" in report
    assert "device free −" not in report and "device free -" not in report
    assert "∆ free (`mem_get_info`) since the start −1024 MiB" in report
    assert "keeps reserved 20 MiB, its free 16 MiB included" in report


def test_caching_allocator_needs_one_cudamalloc_for_a_thousand_tensors() -> None:
    m = run("caching-allocator").metrics
    assert m["cached"]["device_allocs"] == 1
    assert m["cached"]["device_frees"] == 0
    assert m["cached"]["reserved_bytes"] == 64 * MiB
    assert (m["uncached"]["device_allocs"], m["uncached"]["device_frees"]) == (1000, 1000)


def test_view_keeps_storage_allocator_figures() -> None:
    out = run("view-keeps-storage")
    m = out.metrics
    steps = [(s["allocated_bytes"], s["reserved_bytes"]) for s in m["allocator"]]
    assert steps == [(64 * MiB, 64 * MiB), (64 * MiB, 64 * MiB), (1024, 66 * MiB), (1024, 2 * MiB)]
    assert m["cpu_storage"] is None  # no torch given
    assert "allocated 1 KiB, reserved 66 MiB" in out.report


def test_view_keeps_storage_simulated_run_does_not_claim_torch_is_missing() -> None:
    # `--simulate` does not load torch: the CPU check is skipped, torch is not "missing".
    simulated = run("view-keeps-storage", simulate=True).report
    assert "not installed" not in simulated
    assert "skipped in a simulated run" in simulated
    assert "torch not installed" in run("view-keeps-storage").report


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


def test_paged_attention_bars_and_percentages_measure_the_same_thing() -> None:
    m = run("paged-attention").metrics
    held = m["time_avg_held_slots"]
    for name, scheme in m["schemes"].items():
        # Each bar is the batch's time-averaged reserved slots; its label, held / reserved.
        assert held / scheme["time_avg_reserved_slots"] == pytest.approx(
            scheme["utilization"], abs=1e-3
        ), name
    exact = m["schemes"]["exact"]
    assert exact["utilization"] < 0.99  # the old plot drew "exact" as a full bar at 60 %
    assert exact["time_avg_reserved_slots"] > held * 1.5


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


def test_adam_costs_16_bytes_per_parameter_in_zeros_accounting_20_with_fp32_grads() -> None:
    out = run("adam-memory-breakdown")
    m = out.metrics
    assert m["bytes_per_parameter"] == {
        "fp32": 16,
        "mixed (ZeRO: 16 B)": 16,
        "mixed + fp32 grads": 20,
        "bf16, no master": 12,
    }
    assert m["headline"] == "mixed (ZeRO: 16 B)"
    assert m["total_bytes"]["fp32"] == 16 * 7_000_000_000
    assert "ZeRO's accounting" in out.report and "*20 B*" in out.report


def test_adam_step_measured_with_torch_keeps_20_bytes_per_parameter(executor: Executor) -> None:
    measured = through(executor, "adam-memory-breakdown")["measured"]
    n = measured["parameters"]
    assert measured["method"] == "live storages (dispatch-mode tracker)"
    # Counted from what torch allocated, the fp32 grads the step creates included.
    assert (measured["master_bytes"], measured["weights_bytes"]) == (4 * n, 2 * n)
    assert (measured["grads_bytes"], measured["master_grads_bytes"]) == (2 * n, 4 * n)
    assert 8 * n <= measured["adam_state_bytes"] <= 8 * n + 64  # m, v and 4 step counters
    assert measured["bytes_per_parameter"] == 20.0


def test_pinned_vs_pageable_without_a_gpu_is_labelled_and_measures_nothing() -> None:
    out = run("pinned-vs-pageable")
    assert out.metrics["copies"] is None
    assert out.metrics["pin_memory_available"] is False
    assert "n/a" in out.report
    assert not out.simulated  # nothing was simulated: it was not measured at all
    assert "simulated" not in out.report.lower()
    assert out.report.startswith("*Pinned vs pageable host memory · arithmetic, no GPU*")


def test_pinned_vs_pageable_says_overlap_needs_a_side_stream() -> None:
    report = run("pinned-vs-pageable").report
    assert "overlaps compute." not in report  # the old, misleading same-stream claim
    assert "runs in order on its stream" in report
    assert "with torch.cuda.stream(s)" in report and "wait_stream(s)" in report


def test_pinned_vs_pageable_on_cpu_torch_is_a_cpu_run(executor: Executor) -> None:
    if executor.info.torch is None:
        pytest.skip("needs torch (pip install 'quizbot[gpu]')")
    result = executor.run(DemoJob(1, "pinned-vs-pageable", Locale.EN))
    assert result.state is DemoState.SUCCEEDED, result.error
    assert result.report.startswith("*Pinned vs pageable host memory · CPU, no GPU*")
    assert result.metrics["simulated"] is False
    assert result.device.startswith("CPU · torch ")


def test_activation_checkpointing_small_config_live_bytes(executor: Executor) -> None:
    m = through(executor, "activation-checkpointing")
    after = {k: v["after_forward_bytes"] // MiB for k, v in m["modes"].items()}
    assert after == {"none": 128, "per-layer": 64, "sqrt": 44}  # spec Q6, small config
    peak = {k: v["peak_bytes"] / MiB for k, v in m["modes"].items()}
    # Activations only: the 64 MiB of weight gradients exist before the step, like the
    # weights (the old figures, 136 / 76 / 88, counted them as activations in sqrt's).
    assert m["weight_grad_bytes"] == 64 * MiB + 16 * 4096  # 16 × (1024² weights + 1024 bias)
    assert {k: round(v) for k, v in peak.items()} == {"none": 136, "per-layer": 76, "sqrt": 52}
    big = m["spec_config_meta"]["modes"]
    gib = {k: v["after_forward_bytes"] / (1 << 30) for k, v in big.items()}
    assert gib == {"none": 6.0, "per-layer": 3.0, "sqrt": 2.5}  # + 0.125 GiB input = spec
    assert round(m["spec_config_meta"]["weight_grad_bytes"] / (1 << 30), 3) == 0.75


def test_activation_checkpointing_explains_the_unchecked_last_segment(executor: Executor) -> None:
    if executor.info.torch is None:
        pytest.skip("needs torch (pip install 'quizbot[gpu]')")
    report = executor.run(DemoJob(1, "activation-checkpointing", Locale.EN, simulate=True)).report
    assert "never checkpoints its last segment" in report
    assert "the last 4 layers keep all their activations, 32 MiB of the 44 MiB" in report
    assert "leave the last 8 unchecked: 2.00 GiB of 2.50 GiB" in report
    assert "weight gradients (64 MiB) exist before the step" in report


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
    el = run(demo, Locale.EL, png=True)
    assert en.report != el.report
    assert any("\u0370" <= ch <= "\u03ff" for ch in el.report)  # Greek letters
    assert en.metrics == el.metrics
    assert el.png is not None and el.png.startswith(b"\x89PNG")


def test_activation_checkpointing_report_in_greek(executor: Executor) -> None:
    if executor.info.torch is None:
        pytest.skip("needs torch (pip install 'quizbot[gpu]')")
    result = executor.run(DemoJob(1, "activation-checkpointing", Locale.EL, simulate=True))
    assert "μετά το forward" in result.report
    assert "checkpoint" in result.report
