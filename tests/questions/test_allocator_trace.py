"""The trace language that recomputes the allocator questions (allocator_trace.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gpu_runner.sim import MiB

from .allocator_trace import replay


def _trace(report: str, *ops: dict[str, Any]) -> int:
    return replay({"report": report, "ops": list(ops)})


def test_freed_tensors_stay_cached_as_reserved_memory() -> None:
    ops = ({"alloc": 16 * MiB, "count": 2, "as": "a"}, {"free": "a"})
    assert _trace("memory-allocated", *ops) == 0
    assert _trace("memory-reserved", *ops) == 32 * MiB


def test_a_view_keeps_the_storage_until_its_last_name_is_deleted() -> None:
    kept = ({"alloc": 64 * MiB, "as": "x"}, {"view": "x", "as": "head"}, {"free": "x"})
    assert _trace("memory-allocated", *kept) == 64 * MiB
    assert _trace("memory-allocated", *kept, {"free": "head"}) == 0


def test_every_frees_one_tensor_in_k() -> None:
    ops = ({"alloc": 50 * MiB, "count": 4, "as": "t"}, {"free": "t", "every": 2})
    assert _trace("memory-allocated", *ops) == 100 * MiB


def test_largest_free_block_is_zero_without_free_blocks() -> None:
    assert _trace("largest-free-block", {"alloc": 50 * MiB, "as": "t"}) == 0


def test_repeat_runs_the_nested_operations_and_the_cache_serves_them() -> None:
    loop = {"repeat": 3, "ops": [{"alloc": 64 * MiB, "as": "x"}, {"free": "x"}]}
    assert _trace("cudamalloc-calls", loop) == 1
    # x = torch.empty(...) without del: the new tensor exists before the old one is freed,
    # so two blocks take turns.
    rebind = {"repeat": 3, "ops": [{"alloc": 64 * MiB, "as": "x"}]}
    assert _trace("cudamalloc-calls", rebind) == 2


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"report": "memory-reserved", "ops": [{"malloc": 1}]}, "unknown trace operation"),
        ({"report": "memory-reserved", "ops": [{"free": "x"}]}, "trace names no tensors 'x'"),
        ({"report": "peak", "ops": []}, "unknown trace report 'peak'"),
    ],
)
def test_bad_traces_name_the_problem(inputs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        replay(inputs)


@pytest.mark.parametrize(
    "make_view",
    [lambda t: t[:16], lambda t: t.narrow(0, 0, 16), lambda t: t.view(-1)[:16]],
    ids=["slice", "narrow", "view-slice"],
)
def test_torch_views_keep_the_whole_base_storage_as_the_trace_assumes(
    make_view: Callable[[Any], Any],
) -> None:
    torch = pytest.importorskip("torch")
    x = torch.empty(2**30, dtype=torch.uint8, device="meta")  # shapes only, no memory
    head = make_view(x)
    del x
    assert head.untyped_storage().nbytes() == 2**30
