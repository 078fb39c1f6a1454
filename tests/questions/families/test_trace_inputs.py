"""The canonical trace form: bounds, and a malloc that runs out of memory."""

from __future__ import annotations

import pytest

from gpu_runner.sim import GiB, MiB
from questions.families.trace import (
    empty_cache,
    free,
    malloc,
    release_after_frees,
    run_trace,
    trace_inputs,
    trace_problems,
)

from .recompute import replay


def test_an_oom_raises_inside_the_replay_and_the_trace_goes_on() -> None:
    ops = [malloc("a", 60 * MiB), malloc("b", 60 * MiB), free("a"), malloc("c", 40 * MiB)]
    inputs = trace_inputs(ops, "num_ooms", memory_fraction=100 / 16384)  # a 100 MiB cap
    run = run_trace(inputs)
    assert [r.oom for r in run.results] == [False, True, False, False]
    assert run.value("num_ooms") == replay(inputs) == 1
    assert run.results[-1].reused  # c fits a's cached 60 MiB block
    assert run.stats["reserved_bytes.all.current"] == 60 * MiB


def test_each_op_records_what_the_allocator_did() -> None:
    ops = [malloc("a", 5 * MiB), malloc("b", 300 * 1024), free("a"), empty_cache()]
    run = run_trace(trace_inputs(ops, "reserved_bytes.all.current"))
    a, b, del_a, release = run.results
    assert (a.grown, a.small, a.split) == (20 * MiB, False, True)
    assert (b.grown, b.small) == (2 * MiB, True)
    assert (del_a.grown, del_a.released, del_a.reserved) == (0, 0, 22 * MiB)
    assert (release.released, release.reserved) == (20 * MiB, 2 * MiB)


def test_the_release_and_retry_path_is_split_into_released_and_grown() -> None:
    ops = [malloc("a", 60 * MiB), free("a"), malloc("b", 80 * MiB)]
    run = run_trace(trace_inputs(ops, "num_alloc_retries", memory_fraction=100 / 16384))
    retried = run.results[-1]
    assert (retried.retried, retried.released, retried.grown) == (True, 60 * MiB, 80 * MiB)


@pytest.mark.parametrize(
    ("ops", "problem"),
    [
        ([], r"ops: 64 at most, at least 1"),
        ([malloc(str(i), 1) for i in range(65)], "ops: 64 at most"),
        ([malloc("a", 65 * GiB)], r"size 69793218560 is outside 1\.\.68719476736 bytes"),
        ([free("a")], "frees 'a', which is not allocated"),
        ([["copy", "a"]], "is not a malloc, free or empty_cache op"),
    ],
)
def test_traces_outside_the_bounds_are_refused(ops: list[list[object]], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        trace_inputs(ops, "num_ooms")


def test_a_fraction_must_be_a_float_in_the_unit_interval() -> None:
    inputs = {"ops": [malloc("a", 1)], "memory_fraction": 2}
    assert trace_problems(inputs) == ["memory_fraction: 2 is not a float in (0, 1] or null"]


def test_release_after_frees_models_memory_going_back_on_del() -> None:
    ops = [malloc("a", 1), free("a"), malloc("b", 1)]
    assert release_after_frees(ops) == [malloc("a", 1), free("a"), empty_cache(), malloc("b", 1)]
