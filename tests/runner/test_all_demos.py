"""Every registered demo runs through the real executor (fork server, fresh child)."""

from __future__ import annotations

import pytest

from bot.domain import DemoJob, DemoState, Locale
from gpu_runner.demos import SIMULATED_DEVICE, DemoKind, default_registry
from gpu_runner.executor import Executor

REGISTRY = default_registry()
IDS = REGISTRY.ids()


def test_the_registry_has_the_stable_ids() -> None:
    assert IDS == [
        "fragmentation",
        "caching-allocator",
        "oom-inactive-split",
        "expandable-segments",
        "paged-attention",
        "activation-checkpointing",
        "empty-cache-live-tensor",
        "reserved-vs-allocated",
        "adam-memory-breakdown",
        "pinned-vs-pageable",
        "view-keeps-storage",
        "cuda-graph-pool",
        "allocator-trace",
        "attention-memory",
        "ddp-gradient-buckets",
        "model-loading-mmap",
        "grad-accumulation-set-to-none",
    ]


def test_every_demo_the_question_bank_names_is_registered() -> None:
    from questions.loader import load_bank

    # The allocator trace replays generated questions' traces; no bank question names it.
    assert set(load_bank().demos()) <= set(IDS) - {"allocator-trace"}


@pytest.mark.parametrize("demo", IDS)
def test_demo_runs_on_cpu_with_report_metrics_plot_and_device_line(
    executor: Executor, demo: str
) -> None:
    if REGISTRY[demo].kind is DemoKind.TORCH and executor.info.torch is None:
        pytest.skip("needs torch (pip install 'quizbot[gpu]')")
    result = executor.run(DemoJob(7, demo, Locale.EN))
    assert result.state is DemoState.SUCCEEDED, result.error
    assert result.run_id == 7 and result.demo == demo
    assert result.report.startswith("*")  # the bold title line
    assert result.png is not None and result.png.startswith(b"\x89PNG\r\n\x1a\n")
    assert result.metrics
    assert "torch " in result.device  # the torch it ran with, or whose rules it follows
    if executor.info.has_gpu:
        return
    if result.metrics.get("simulated"):
        assert result.device.startswith(SIMULATED_DEVICE)
        assert "· simulated*" in result.report.splitlines()[0]
        assert "not yet checked on a GPU" in result.report
    elif executor.info.torch is None:  # the mixed demos' arithmetic alone
        assert result.device == "arithmetic only, no GPU (torch not installed)"
        assert "· arithmetic, no GPU*" in result.report.splitlines()[0]
    else:
        assert result.device.startswith("CPU · torch ") and "(no GPU)" in result.device
        assert "simulated" not in result.report.lower()
        assert "· CPU, no GPU*" in result.report.splitlines()[0]


def test_demo_report_in_greek(executor: Executor) -> None:
    result = executor.run(DemoJob(8, "oom-inactive-split", Locale.EL))
    assert result.state is DemoState.SUCCEEDED
    assert "επαναπροσπάθειες 1" in result.report  # retries, in the glossary's word
    assert "memory_summary()" in result.report  # API names stay in English


def test_simulate_flag_forces_the_simulator(executor: Executor) -> None:
    result = executor.run(DemoJob(9, "fragmentation", Locale.EN, simulate=True))
    assert result.device == SIMULATED_DEVICE == "simulated allocator (torch 2.13 rules)"
    assert result.metrics["fragmentation_index"] == 0.875


def test_without_torch_allocator_demos_still_run_and_torch_demos_name_the_extra(
    fault_executor: Executor,
) -> None:
    ok = fault_executor.run(DemoJob(10, "fragmentation", Locale.EN))
    assert ok.state is DemoState.SUCCEEDED
    paged = fault_executor.run(DemoJob(11, "paged-attention", Locale.EN))
    assert paged.state is DemoState.SUCCEEDED
    assert "pip install 'quizbot[gpu]'" in paged.report
    assert paged.device == "arithmetic only, no GPU (torch not installed)"
    assert "· arithmetic, no GPU*" in paged.report.splitlines()[0]
    missing = fault_executor.run(DemoJob(12, "activation-checkpointing", Locale.EN))
    assert missing.state is DemoState.FAILED
    assert "pip install 'quizbot[gpu]'" in missing.error
