"""On a CUDA machine: allocator traces replayed on the real allocator must match the
simulator step by step, and the new demos must measure on the device (skipped without
CUDA). The traces are the shapes question families generate: hand-written ones for each
rule, and seeded random ones."""

from __future__ import annotations

import random
from typing import Any

import pytest

from bot.domain import DemoJob, DemoState, Locale
from gpu_runner.executor import Executor
from tests.runner.test_allocator_trace import trace as inputs

pytestmark = pytest.mark.gpu
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
CONFS = (
    "",
    "expandable_segments:True",
    "max_split_size_mb:40",
    "roundup_power2_divisions:4",
    "max_split_size_mb:20,roundup_power2_divisions:[256:2,>:8]",
)
ASKS = (
    "reserved_bytes.all.current",
    "allocated_bytes.all.current",
    "segment.all.current",
    "inactive_split_bytes.all.current",
    "num_alloc_retries",
    "num_ooms",
    "reserved_bytes.all.peak",
)


def random_trace(seed: int) -> dict[str, Any]:
    """Up to 64 ops under a cap of ~820 MiB or ~410 MiB, so OOMs and retries happen."""
    rng = random.Random(seed)
    live: list[str] = []
    ops: list[list[Any]] = []
    for i in range(rng.randint(24, 64)):
        roll = rng.random()
        if live and roll < 0.35:
            ops.append(["free", live.pop(rng.randrange(len(live)))])
        elif roll < 0.4:
            ops.append(["empty_cache"])
        else:
            scale = rng.choice((KiB, 64 * KiB, MiB, 8 * MiB, 48 * MiB))
            ops.append(["malloc", f"t{i}", rng.randint(1, 4 * scale)])
            live.append(f"t{i}")
    return inputs(
        ops,
        conf=CONFS[seed % len(CONFS)],
        memory_fraction=rng.choice((0.01, 0.005)),
        ask=rng.choice(ASKS),
    )


HAND_WRITTEN = [
    inputs([["malloc", "a", 1], ["malloc", "b", 1001], ["malloc", "c", MiB + 1], ["free", "a"]]),
    inputs(
        [
            ["malloc", "a", 300 * MiB],
            ["malloc", "b", 5 * MiB],
            ["free", "a"],
            ["malloc", "d", 200 * MiB],
            ["malloc", "e", 320 * MiB],
            ["free", "b"],
            ["empty_cache"],
        ],
        total_memory=GiB,
        memory_fraction=0.5,
        ask="num_ooms",
    ),
    inputs(
        [["malloc", f"x{i}", 50 * MiB] for i in range(8)]
        + [["free", f"x{i}"] for i in range(0, 8, 2)]
        + [["malloc", "big", 120 * MiB]],
        memory_fraction=0.005,
        ask="num_alloc_retries",
    ),
    inputs(
        [
            ["malloc", "w", 300 * MiB],
            ["free", "w"],
            ["malloc", "y", 250 * MiB],
            ["malloc", "z", 30 * MiB],
            ["empty_cache"],
        ],
        conf="max_split_size_mb:100",
        ask="reserved_bytes.all.current",
    ),
    inputs(
        [["malloc", f"s{i}", (i + 1) * 3 * MiB + 512 * i] for i in range(12)]
        + [["free", f"s{i}"] for i in range(0, 12, 3)]
        + [["malloc", "late", 40 * MiB], ["empty_cache"]],
        conf="expandable_segments:True",
        memory_fraction=0.003,
        ask="reserved_bytes.all.current",
    ),
]
TRACES = HAND_WRITTEN + [random_trace(seed) for seed in range(10)]


@pytest.fixture(scope="module")
def gpu(executor: Executor) -> Executor:
    if not executor.info.has_gpu:
        pytest.skip("no CUDA device")
    return executor


@pytest.mark.parametrize("trace", TRACES, ids=[f"trace{i}" for i in range(len(TRACES))])
def test_trace_on_the_real_allocator_matches_the_simulator(gpu: Executor, trace: Any) -> None:
    result = gpu.run(DemoJob(1, "allocator-trace", Locale.EN, {"inputs": trace}))
    assert result.state is DemoState.SUCCEEDED, result.error
    assert "CUDA" in result.device
    m = result.metrics
    assert m["simulated"] is False and m["not_comparable"] == []
    assert m["steps"] == m["simulator_steps"]
    assert m["agree"] is True and m["value"] == m["simulator_value"]


def test_new_demos_measure_on_the_gpu(gpu: Executor) -> None:
    def on_gpu(demo: str, **params: object) -> dict[str, Any]:
        result = gpu.run(DemoJob(2, demo, Locale.EN, params))
        assert result.state is DemoState.SUCCEEDED, (demo, result.error)
        assert result.png is not None
        return dict(result.metrics)

    attention = on_gpu("attention-memory", seq_len=8192)
    last = attention["points"][-1]
    assert attention["measured_with"] == "cuda" and last["measured"]
    assert last["naive_peak_bytes"] >= 2 * last["score_buffer_bytes"]
    assert last["sdpa_peak_bytes"] < last["score_buffer_bytes"] / 16

    ddp = on_gpu("ddp-gradient-buckets")
    grads = ddp["gradient_bytes"]
    assert ddp["rule_matches_ddp"] is True
    copy, view = ddp["measured"]["copy"], ddp["measured"]["view"]
    assert copy["memory_allocated_above_model_bytes"] >= 2 * grads
    assert view["memory_allocated_above_model_bytes"] < 1.5 * grads

    accumulation = on_gpu("grad-accumulation-set-to-none")
    params = accumulation["parameter_bytes"]
    peaks = {k: v["step_peak_bytes"][-1] for k, v in accumulation["set_to_none"].items()}
    assert peaks["False"] - peaks["True"] >= params // 2

    on_gpu("model-loading-mmap", size_mib=64)  # host memory: runs beside a live CUDA context
