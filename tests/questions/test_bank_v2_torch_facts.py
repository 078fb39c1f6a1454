"""What the bank-v2 questions take from PyTorch 2.13, checked against the installed release.

The bank describes one PyTorch release (questions.PYTORCH_VERSION) and test_packaged_bank.py pins
the installed torch to it. The questions below quote that release's defaults, messages and
behaviour; each test names the question it backs, so that when torch moves a failure says which
question to re-check (questions/README.md, "Which PyTorch"). Everything here runs on the CPU
wheel: behaviour is exercised where the CPU shows it, the rest is read from torch's own config,
docstrings and source.
"""

from __future__ import annotations

import warnings
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")


def test_a_plain_load_into_meta_parameters_is_a_warned_no_op() -> None:
    # model-loading-meta-without-assign
    with torch.device("meta"):
        model = torch.nn.Linear(4, 4)
    checkpoint = torch.nn.Linear(4, 4).state_dict()
    with pytest.warns(UserWarning, match="is a no-op"):
        model.load_state_dict(checkpoint)
    assert model.weight.is_meta
    model.load_state_dict(checkpoint, assign=True)
    assert not model.weight.is_meta


def test_assign_true_leaves_an_earlier_optimizer_on_the_old_parameters() -> None:
    # model-loading-assign-before-optimizer
    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.AdamW(model.parameters())
    old_weight = model.weight
    model.load_state_dict(torch.nn.Linear(4, 4).state_dict(), assign=True)
    optimized = [p for group in optimizer.param_groups for p in group["params"]]
    assert model.weight is not old_weight
    assert any(p is old_weight for p in optimized)
    assert all(p is not model.weight for p in optimized)


def test_zero_grad_sets_gradients_to_none_and_backward_accumulates_in_place() -> None:
    # optimizer-memory-zero-grad-default, optimizer-memory-grad-accumulation
    model = torch.nn.Linear(4, 4)
    model(torch.randn(2, 4)).sum().backward()
    first = model.weight.grad
    storage = first.data_ptr()
    model(torch.randn(2, 4)).sum().backward()
    assert model.weight.grad is first and first.data_ptr() == storage
    torch.optim.SGD(model.parameters(), lr=0.1).zero_grad()
    assert model.weight.grad is None


class _CountOps(torch.utils._python_dispatch.TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[Any] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops[func] += 1
        return func(*args, **(kwargs or {}))


def _backward_ops(**checkpoint_kwargs: Any) -> Counter[Any]:
    x = torch.randn(4, 4, requires_grad=True)
    w = torch.randn(4, 4, requires_grad=True)
    out = torch.utils.checkpoint.checkpoint(
        lambda x, w: torch.mm(x, w).sin().mm(w).sum(),
        x,
        w,
        use_reentrant=False,
        **checkpoint_kwargs,
    )
    with _CountOps() as counter:
        out.backward()
    return counter.ops


def test_a_selective_checkpoint_op_list_saves_those_ops_and_recomputes_the_rest() -> None:
    # offload-sac-ops-list: a list means MUST_SAVE for its ops, PREFER_RECOMPUTE for the others.
    mm, sin = torch.ops.aten.mm.default, torch.ops.aten.sin.default
    plain = _backward_ops()
    selective = _backward_ops(
        context_fn=partial(torch.utils.checkpoint.create_selective_checkpoint_contexts, [mm])
    )
    assert selective[mm] == plain[mm] - 1  # the forward mm is no longer recomputed
    assert selective[sin] == plain[sin] == 1  # the pointwise op still is


def test_the_partitioner_never_recomputes_compute_intensive_ops_by_default() -> None:
    # torch-compile-partitioner-no-matmul-recompute
    from torch._functorch import config
    from torch._functorch.partitioners import get_default_op_list

    aten = torch.ops.aten
    ops = get_default_op_list()
    heavy = [aten.mm, aten.addmm, aten.bmm, aten.convolution]
    heavy += [
        aten._scaled_dot_product_flash_attention,
        aten._scaled_dot_product_efficient_attention,
    ]
    assert all(op in ops.compute_intensive_ops for op in heavy)
    assert not any(op in ops.recomputable_ops for op in heavy)
    assert config.ban_recompute_not_in_allowlist is True


def test_the_activation_memory_budget_defaults() -> None:
    # torch-compile-activation-memory-budget
    from torch._functorch import config

    assert config.activation_memory_budget == 1.0
    assert config.activation_memory_budget_solver == "dp"
    assert config.activation_memory_budget_runtime_estimator == "flops"


def test_cudagraph_trees_rerecord_per_shape_and_name_overwritten_outputs() -> None:
    # torch-compile-cudagraph-dynamic-shapes, torch-compile-cudagraph-output-overwritten
    from torch._inductor import config

    assert config.triton.cudagraph_skip_dynamic_graphs is False
    assert config.triton.cudagraph_dynamic_shape_warn_limit == 8
    # Read, not imported: importing cudagraph_trees warns about torch.jit on this release.
    source = (Path(torch.__file__).parent / "_inductor" / "cudagraph_trees.py").read_text()
    assert "overwritten by a subsequent run" in source
    assert "clone the tensor outside of torch.compile()" in source


def test_export_memory_timeline_is_deprecated_in_favour_of_snapshots() -> None:
    # memory-profiling-profile-memory-flag (deprecated since 2.10, PR #168036)
    message = getattr(torch.profiler.profile.export_memory_timeline, "__deprecated__", "")
    assert "deprecated" in message and "_record_memory_history" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.profiler.profile(profile_memory=True)  # the flag itself is not deprecated


# question id -> (the API whose docstring the question quotes, the phrase it relies on)
QUOTED_DOCSTRINGS = {
    "allocator-backend-mempool-backward-thread": (
        "torch.cuda.use_mem_pool",
        "(e.g. by calling backward)",
    ),
    "optimizer-memory-foreach-intermediates": (
        "torch.optim.AdamW",
        "~ sizeof(params) more peak memory",
    ),
    "library-cublas-workspace-per-stream": (
        "torch.backends.cuda.blas_workspace_size",
        "TORCH_CUBLASLT_UNIFIED_WORKSPACE`` is enabled (the default on open-source CUDA builds)",
    ),
    "allocator-backend-pluggable-after-init": (
        "torch.cuda.memory.change_current_allocator",
        "already been used/initialized, this function will error",
    ),
    "memory-leaks-reference-cycles": (
        "torch.utils.viz._cycles.warn_tensor_cycles",
        "cycle that is holding CUDA memory",
    ),
    "ddp-gradient-as-bucket-view": (
        "torch.nn.parallel.DistributedDataParallel",
        "saved memory size will be equal to the total gradients",
    ),
}


@pytest.mark.parametrize("question", sorted(QUOTED_DOCSTRINGS))
def test_the_docstrings_the_questions_quote(question: str) -> None:
    api, phrase = QUOTED_DOCSTRINGS[question]
    module, _, name = api.rpartition(".")
    doc = getattr(__import__(module, fromlist=[name]), name).__doc__ or ""
    assert phrase in " ".join(doc.split()), f"{api} no longer says this; re-check {question}"
