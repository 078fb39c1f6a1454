"""The arithmetic of the CUDA-only paths, on `memory_stats()` dicts and timings shaped like
torch's (no GPU needed): what the demos compute from what a GPU reports."""

from __future__ import annotations

import pytest

from gpu_runner.demos.activation_checkpointing import last_segment_layers, sqrt_segments
from gpu_runner.demos.adam_memory_breakdown import ALLOCATED, breakdown
from gpu_runner.demos.cuda_graph_pool import private_pool_bytes
from gpu_runner.demos.pinned_vs_pageable import copy_figures, overlap_figures

MiB = 1 << 20


def pool_stats(pool: str, large: int, small: int) -> dict[str, int]:
    """`reserved_bytes_by_private_pools` of one pool, flattened as torch 2.13 does."""
    out = {}
    for part, value in (("all", large + small), ("large_pool", large), ("small_pool", small)):
        for metric in ("current", "peak", "allocated"):
            out[f"reserved_bytes_by_private_pools.{pool}.{part}.{metric}"] = value
        out[f"reserved_bytes_by_private_pools.{pool}.{part}.freed"] = 0
    return out


def test_private_pool_bytes_reads_each_pools_all_current_once() -> None:
    stats = {
        "reserved_bytes.all.current": 256 * MiB,
        "allocated_bytes.all.current": 128 * MiB,
        **pool_stats("1_0", 192 * MiB, 0),
    }
    # Summing every ".current" key would count 192 MiB twice (all + large_pool): 384.
    assert private_pool_bytes(stats) == 192 * MiB
    stats |= pool_stats("2_0", 20 * MiB, 2 * MiB)
    assert private_pool_bytes(stats) == 192 * MiB + 22 * MiB


def test_private_pool_bytes_is_unknown_where_torch_has_no_such_statistic() -> None:
    assert private_pool_bytes({"reserved_bytes.all.current": 64 * MiB}) is None


def test_adam_breakdown_from_allocated_bytes_deltas() -> None:
    n = 525_312
    readings = [0, 4 * n, 6 * n, 8 * n, 12 * n, 20 * n]  # + master, weights, grads, fp32, m+v
    stats = [{ALLOCATED: 7 * MiB + r, "reserved_bytes.all.current": 64 * MiB} for r in readings]
    m = breakdown(stats, n)
    assert (m["master_bytes"], m["weights_bytes"], m["grads_bytes"]) == (4 * n, 2 * n, 2 * n)
    assert (m["master_grads_bytes"], m["adam_state_bytes"]) == (4 * n, 8 * n)
    assert m["bytes_per_parameter"] == 20.0
    with pytest.raises(ValueError, match="need 6 readings"):
        breakdown(stats[:3], n)


def test_copy_figures_take_medians_of_the_repeats() -> None:
    size = 256 * MiB
    total = [0.0060, 0.0054, 0.0055, 0.0200, 0.0054]  # one outlier
    returned = [0.000012, 0.000011, 0.000010, 0.000500, 0.000011]
    fig = copy_figures(size, total, returned)
    assert fig == {
        "gb_per_s": round(size / 0.0055 / 1e9, 2),
        "call_returns_us": 11.0,
        "copy_ms": 5.5,
    }


def test_overlap_counts_how_much_of_the_shorter_phase_a_side_stream_hides() -> None:
    same = overlap_figures(copy_ms=5.0, compute_ms=4.0, same_stream_ms=9.1, side_stream_ms=9.0)
    assert same["hidden_fraction"] == 0.0  # in order: nothing hidden
    side = overlap_figures(copy_ms=5.0, compute_ms=4.0, same_stream_ms=9.1, side_stream_ms=5.5)
    assert side["hidden_fraction"] == 0.875
    assert overlap_figures(5.0, 4.0, 9.0, 4.0)["hidden_fraction"] == 1.0  # clamped


def test_checkpoint_sequential_leaves_its_last_segment_unchecked() -> None:
    assert (sqrt_segments(16), last_segment_layers(16, 4)) == (4, 4)
    assert (sqrt_segments(24), last_segment_layers(24, 5)) == (5, 8)  # 2 of 2.5 GiB
    assert last_segment_layers(2, 1) == 2
