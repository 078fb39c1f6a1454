"""The rules `autocast-weight-cache` teaches, checked on the installed PyTorch.

autocast's cast cache (``cached_cast`` in aten/src/ATen/autocast_mode.cpp) is shared by
the CPU and CUDA back ends, so the CPU build shows it: a cast is counted as an
``aten._to_copy`` call, and a cached one happens once however often the weight is used.
When torch moves past what these say, re-check the family's questions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

USES = 3  # the same Linear applied three times in one autocast region


class CountCasts(TorchDispatchMode):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.casts = 0

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        if func is torch.ops.aten._to_copy.default:
            self.casts += 1
        return func(*args, **(kwargs or {}))


def weight_casts(
    context: Callable[[], Any] = contextlib.nullcontext,
    *,
    trainable: bool = True,
    cache: bool = True,
) -> int:
    """How many times the weight was cast across `USES` uses (the input is cast each time)."""
    linear = torch.nn.Linear(64, 64, bias=False)
    linear.weight.requires_grad_(trainable)
    x = torch.randn(4, 64)
    counter = CountCasts()
    with (
        context(),
        torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=cache),
        counter,
    ):
        for _ in range(USES):
            linear(x)
    return counter.casts - USES  # the fp32 input is not a leaf weight: cast at every use


def test_a_trainable_fp32_weight_is_cast_once_and_kept() -> None:
    assert weight_casts() == 1


def test_a_frozen_weight_is_cast_again_at_every_use() -> None:
    assert weight_casts(trainable=False) == USES


def test_cache_enabled_false_casts_at_every_use() -> None:
    assert weight_casts(cache=False) == USES


def test_no_grad_keeps_the_cache_the_weight_still_requires_grad() -> None:
    assert weight_casts(torch.no_grad) == 1


def test_an_embedding_lookup_casts_nothing() -> None:
    embedding = torch.nn.Embedding(100, 64)
    counter = CountCasts()
    with torch.autocast("cpu", dtype=torch.bfloat16), counter:
        embedding(torch.arange(8))
    assert counter.casts == 0


def test_a_bf16_weight_needs_no_cast() -> None:
    linear = torch.nn.Linear(64, 64, bias=False).to(torch.bfloat16)
    counter = CountCasts()
    with torch.autocast("cpu", dtype=torch.bfloat16), counter:
        for _ in range(USES):
            linear(torch.randn(4, 64))
    assert counter.casts == USES  # only the fp32 input, each time


def test_a_bf16_weight_under_fp16_autocast_is_cast_at_every_use() -> None:
    """Why a LoRA base is stored in the autocast dtype: in the other 16-bit type it is cast
    (not cached) at every use, and the family's 'casts nothing' would be false."""
    linear = torch.nn.Linear(64, 64, bias=False).to(torch.bfloat16).requires_grad_(False)
    counter = CountCasts()
    with torch.autocast("cpu", dtype=torch.float16), counter:
        for _ in range(USES):
            linear(torch.randn(4, 64))
    assert counter.casts == 2 * USES  # the input and the weight, each time


def test_the_cache_outlives_backward_inside_the_region_and_ends_with_it() -> None:
    linear = torch.nn.Linear(64, 64, bias=False)
    counter = CountCasts()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        for _ in range(USES):  # micro-batches of one accumulation step
            with counter:  # casts are counted in the forward passes only
                out = linear(torch.randn(4, 64))
            out.float().sum().backward()
    inside = counter.casts - USES  # each input is cast once
    with torch.autocast("cpu", dtype=torch.bfloat16), counter:
        linear(torch.randn(4, 64))
    assert inside == 1
    assert counter.casts - USES - 1 - inside == 1  # a new region casts the weight again
