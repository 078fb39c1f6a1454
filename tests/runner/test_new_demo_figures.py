"""Rule-determined figures of attention-memory, ddp-gradient-buckets, model-loading-mmap
and grad-accumulation-set-to-none. Their torch parts run in the executor's child (this
process never imports torch) and are skipped where torch is not installed."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from bot.domain import DemoJob, DemoState, Locale
from gpu_runner.demos import RunContext, default_registry
from gpu_runner.demos.ddp_gradient_buckets import assign_buckets, parameter_bytes
from gpu_runner.executor import Executor

pytestmark = pytest.mark.slow

MiB = 1 << 20
KiB = 1 << 10
REGISTRY = default_registry()


def in_child(executor: Executor, demo: str, locale: Locale = Locale.EN, **params: object) -> Any:
    if executor.info.torch is None:
        pytest.skip("needs torch (pip install 'quizbot[gpu]')")
    result = executor.run(DemoJob(3, demo, locale, params, simulate=True))
    assert result.state is DemoState.SUCCEEDED, result.error
    assert result.png is not None and result.png.startswith(b"\x89PNG")
    return result


def without_torch(demo: str, **params: object) -> Any:
    """In this process, the plot drawn but not encoded (these checks read the figures)."""
    checked = REGISTRY.check(demo, params)
    return REGISTRY[demo].run(RunContext(demo, Locale.EN, checked, torch=None, encode_png=False))


# -- attention-memory -------------------------------------------------------------------


def test_attention_arithmetic_alone_names_the_extra_and_grows_fourfold() -> None:
    out = without_torch("attention-memory", seq_len=4096, heads=16, head_dim=64, batch=2)
    points = out.metrics["points"]
    assert [p["seq_len"] for p in points] == [256, 512, 1024, 2048, 4096]
    assert points[-1]["score_buffer_bytes"] == 2 * 16 * 4096 * 4096 * 4  # 2 GiB
    assert points[-1]["naive_predicted_bytes"] == 4 << 30
    assert all(
        b["score_buffer_bytes"] == 4 * a["score_buffer_bytes"]
        for a, b in itertools.pairwise(points)
    )
    assert not any(p["measured"] for p in points)
    assert "pip install 'quizbot[gpu]'" in out.report


def test_attention_naive_peak_is_two_score_buffers_and_sdpa_stays_linear(
    executor: Executor,
) -> None:
    m = in_child(executor, "attention-memory").metrics
    assert m["measured_with"] == "cpu-profiler"
    last = m["points"][-1]
    score = 8 * 2048 * 2048 * 4
    out = 8 * 2048 * 64 * 4
    assert last["seq_len"] == 2048 and last["score_buffer_bytes"] == score
    # q @ k.T and its scaled copy (or the soft-max output) live together, plus the output
    assert 2 * score <= last["naive_peak_bytes"] <= 2 * score + out + 64 * KiB
    assert last["sdpa_peak_bytes"] < score / 16
    before = m["points"][-2]
    assert 3.5 < last["naive_peak_bytes"] / before["naive_peak_bytes"] <= 4.1
    assert last["sdpa_peak_bytes"] / before["sdpa_peak_bytes"] < 2.5


def test_attention_points_beyond_the_cpu_budget_are_arithmetic_only(executor: Executor) -> None:
    result = in_child(executor, "attention-memory", Locale.EL, seq_len=16384)
    measured = [p["measured"] for p in result.metrics["points"]]
    # N = 1024 ... 16384; 2 x score buffer = 1 GiB > the 640 MiB budget from N = 4096
    assert measured == [True, True, False, False, False]
    assert "μόνο αριθμητική" in result.report


# -- ddp-gradient-buckets ---------------------------------------------------------------


def test_ddp_buckets_follow_the_rules_first_bucket_1_mib_only_when_the_cap_is_unset() -> None:
    sizes = parameter_bytes(12, 1024)
    layer = 4 * MiB + 4 * KiB
    unset = assign_buckets(sizes, 0)
    assert [len(b) for b in unset] == [2, 14, 8]
    assert unset[0] == ["11.bias", "11.weight"]  # the last layer's gradients are ready first
    # the tensor that crosses 25 MiB stays in its bucket: 7 layers = 28.03 MiB
    m = without_torch("ddp-gradient-buckets").metrics
    assert m["rule_bucket_bytes"] == [layer, 7 * layer, 4 * layer]
    explicit = assign_buckets(sizes, 25)
    assert [len(b) for b in explicit] == [14, 10]  # an explicit cap applies to bucket 0 too
    assert m["predicted_bytes"] == {"copy": 24 * layer, "view": 12 * layer}


def test_ddp_real_buckets_match_and_bucket_views_halve_gradient_memory(
    executor: Executor,
) -> None:
    m = in_child(executor, "ddp-gradient-buckets", layers=6, width=512, bucket_cap_mb=2).metrics
    grads = 6 * (512 * 512 + 512) * 4
    assert m["rule_matches_ddp"] is True
    assert m["measured"]["backend"] == "gloo"
    copy, view = m["measured"]["copy"], m["measured"]["view"]
    assert copy["buckets"] == view["buckets"] == m["rule_buckets"]
    assert copy["total_bytes"] == 2 * grads and copy["grads_are_bucket_views"] is False
    assert view["total_bytes"] == grads and view["grads_are_bucket_views"] is True


# -- model-loading-mmap -----------------------------------------------------------------


def test_loading_peaks_at_two_copies_one_copy_or_almost_none(executor: Executor) -> None:
    m = in_child(executor, "model-loading-mmap", size_mib=64).metrics
    weights = m["weights_bytes"]
    assert weights == 16 * 1024 * 1024 * 4  # 16 layers of 1024 x 1024 fp32
    modes = m["modes"]
    assert all("error" not in r for r in modes.values()), modes
    assert 1.9 * weights <= modes["plain"]["peak_bytes"] <= 2.2 * weights
    assert 0.95 * weights <= modes["meta+assign"]["peak_bytes"] <= 1.2 * weights
    lazy = modes["meta+mmap+assign"]
    assert lazy["peak_bytes"] < 0.05 * weights and lazy["anon_bytes"] < 0.05 * weights
    # using the weights pages them in from the file: file-backed, not anonymous
    assert lazy["file_after_forward_bytes"] >= 0.95 * weights
    assert lazy["anon_after_forward_bytes"] < 0.05 * weights


# -- grad-accumulation-set-to-none ------------------------------------------------------


def test_accumulation_keeps_one_copy_and_set_to_none_frees_it_between_steps(
    executor: Executor,
) -> None:
    m = in_child(
        executor, "grad-accumulation-set-to-none", layers=3, width=256, accum_steps=3
    ).metrics
    params = 3 * (256 * 256 + 256) * 4
    assert m["parameter_bytes"] == params
    for setting in ("True", "False"):
        events = {e["event"]: e["grad_bytes"] for e in m["set_to_none"][setting]["events"]}
        assert events["fwd 1.1"] == 0  # no gradients before the first backward
        assert {events[f"bwd {s}.{k}"] for s in (1, 2) for k in (1, 2, 3)} == {params}
        assert events["step 2"] == params
    kept = {e["event"]: e["grad_bytes"] for e in m["set_to_none"]["False"]["events"]}
    freed = {e["event"]: e["grad_bytes"] for e in m["set_to_none"]["True"]["events"]}
    assert (freed["zero 1"], freed["fwd 2.1"]) == (0, 0)
    assert (kept["zero 1"], kept["fwd 2.1"]) == (params, params)


def test_torch_only_demos_name_the_extra_without_torch(fault_executor: Executor) -> None:
    for demo in ("model-loading-mmap", "grad-accumulation-set-to-none"):
        result = fault_executor.run(DemoJob(4, demo, Locale.EN))
        assert result.state is DemoState.FAILED
        assert "pip install 'quizbot[gpu]'" in result.error
    for demo in ("attention-memory", "ddp-gradient-buckets"):
        result = fault_executor.run(DemoJob(5, demo, Locale.EN))
        assert result.state is DemoState.SUCCEEDED, result.error
        assert "pip install 'quizbot[gpu]'" in result.report
