"""On a CUDA machine: the allocator demos on the real allocator must reproduce the
simulator's rule-determined figures exactly (skipped without CUDA)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bot.domain import DemoJob, DemoState, Locale
from gpu_runner.demos import SIMULATED_DEVICE
from gpu_runner.executor import Executor, ExecutorConfig

pytestmark = pytest.mark.gpu
MiB = 1 << 20


@pytest.fixture(scope="module")
def cuda_executor(executor: Executor) -> Iterator[Executor]:
    # The fork server's probe child looked for GPUs; this process never imports torch.
    if not executor.info.has_gpu:
        pytest.skip("no CUDA device")
    with Executor(ExecutorConfig(timeout=120.0)) as ex:
        yield ex


def both(ex: Executor, demo: str) -> tuple[dict[str, Any], dict[str, Any]]:
    gpu = ex.run(DemoJob(1, demo, Locale.EN))
    sim = ex.run(DemoJob(2, demo, Locale.EN, simulate=True))
    assert gpu.state is DemoState.SUCCEEDED, gpu.error
    assert sim.state is DemoState.SUCCEEDED, sim.error
    assert gpu.metrics["simulated"] is False and sim.metrics["simulated"] is True
    assert "CUDA" in gpu.device and "torch " in gpu.device and sim.device == SIMULATED_DEVICE
    return dict(gpu.metrics), dict(sim.metrics)


def test_fragmentation_matches_the_simulator(cuda_executor: Executor) -> None:
    gpu, sim = both(cuda_executor, "fragmentation")
    for key in (
        "allocated_bytes",
        "reserved_bytes",
        "segments",
        "inactive_split_bytes",
        "free_blocks",
        "largest_free_bytes",
        "fragmentation_index",
    ):
        assert gpu[key] == sim[key], key


def test_reserved_vs_allocated_matches_the_simulator(cuda_executor: Executor) -> None:
    gpu, sim = both(cuda_executor, "reserved-vs-allocated")
    assert gpu["steps"] == sim["steps"]
    assert gpu["after_free"] == sim["after_free"]
    assert gpu["after_empty_cache"] == sim["after_empty_cache"]


def test_oom_inactive_split_matches_the_simulator(cuda_executor: Executor) -> None:
    gpu, sim = both(cuda_executor, "oom-inactive-split")
    rule = (
        "oom",
        "num_alloc_retries",
        "num_ooms",
        "allocated_bytes",
        "reserved_bytes",
        "inactive_split_bytes",
        "segments",
        "largest_free_bytes",
    )
    assert {k: gpu["at_request"][k] for k in rule} == {k: sim["at_request"][k] for k in rule}
    assert gpu["outcome"] == sim["outcome"] == "oom"
    assert gpu["room_under_cap_bytes"] == sim["room_under_cap_bytes"]
    assert "Tried to allocate 300.00 MiB" in gpu["oom_message"]
    for remedy in ("expandable_segments", "max_split_size_mb"):
        assert gpu["remedies"][remedy] == sim["remedies"][remedy], remedy
    assert gpu["after_freeing_live_tensors"] == sim["after_freeing_live_tensors"]
    assert gpu["retry"]["new_device_allocs"] == sim["retry"]["new_device_allocs"] == 0
    assert gpu["other_allocations_bytes"] is not None  # the CUDA context, measured


def test_expandable_segments_match_the_simulator(cuda_executor: Executor) -> None:
    gpu, sim = both(cuda_executor, "expandable-segments")
    for mode in ("native", "expandable"):
        for key in (
            "ooms",
            "oom_at",
            "num_alloc_retries",
            "peak_reserved_bytes",
            "peak_allocated_bytes",
            "uncapped_peak_reserved_bytes",
            "shrink_grow",
            "retry_steps",
        ):
            assert gpu[mode][key] == sim[mode][key], (mode, key)
        assert gpu[mode]["q3_layout"] == sim[mode]["q3_layout"], mode


def test_empty_cache_and_views_match_the_simulator(cuda_executor: Executor) -> None:
    gpu, sim = both(cuda_executor, "empty-cache-live-tensor")
    strip = [{k: v for k, v in s.items() if k != "device_free_delta_bytes"} for s in gpu["view"]]
    assert strip == [
        {k: v for k, v in s.items() if k != "device_free_delta_bytes"} for s in sim["view"]
    ]
    assert gpu["shared_segment"] == sim["shared_segment"]
    gpu_v, sim_v = both(cuda_executor, "view-keeps-storage")
    assert gpu_v["allocator"] == sim_v["allocator"]


def test_caching_allocator_counts_and_times(cuda_executor: Executor) -> None:
    gpu, sim = both(cuda_executor, "caching-allocator")
    assert gpu["cached"]["device_allocs"] == sim["cached"]["device_allocs"] == 1
    assert gpu["cached"]["us_per_iter"] < gpu["uncached"]["us_per_iter"]


def test_gpu_only_demos_measure_on_the_device(cuda_executor: Executor) -> None:
    for demo in (
        "pinned-vs-pageable",
        "cuda-graph-pool",
        "paged-attention",
        "adam-memory-breakdown",
        "activation-checkpointing",
    ):
        result = cuda_executor.run(DemoJob(3, demo, Locale.EN))
        assert result.state is DemoState.SUCCEEDED, (demo, result.error)
        assert "CUDA" in result.device
    pinned = cuda_executor.run(DemoJob(4, "pinned-vs-pageable", Locale.EN)).metrics["copies"]
    assert pinned["pinned"]["gb_per_s"] > pinned["pageable"]["gb_per_s"]
    assert pinned["pinned"]["call_returns_us"] < pinned["pageable"]["call_returns_us"]
    overlap = pinned["overlap"]
    assert overlap["side_stream_ms"] < overlap["same_stream_ms"]  # overlap needs a side stream
    graph = cuda_executor.run(DemoJob(5, "cuda-graph-pool", Locale.EN)).metrics["steps"]
    assert graph[2]["reserved_bytes"] > graph[0]["reserved_bytes"]  # pool kept without output
    # Three 64 MiB tensors were allocated during capture: the pool's `.all` figure, once.
    assert graph[1]["private_pool_bytes"] == 192 * MiB
    adam = cuda_executor.run(DemoJob(6, "adam-memory-breakdown", Locale.EN)).metrics["measured"]
    assert adam["method"] == "memory_allocated() deltas"
    assert adam["bytes_per_parameter"] == 20.0
