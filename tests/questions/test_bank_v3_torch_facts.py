"""What the bank-v3 questions take from PyTorch 2.13, checked against the installed release.

Like test_bank_v2_torch_facts.py: each test names the question it backs, so that when torch moves
a failure says which question to re-check. Everything runs on the CPU wheel: behaviour where the
CPU shows it (CPU autocast caches casts by the same code as CUDA autocast, FSDP2 runs on a
one-process gloo group), the wheel's headers, docstrings and source otherwise.
"""

from __future__ import annotations

import inspect
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional
TORCH_DIR = Path(torch.__file__).parent


class _CountOps(torch.utils._python_dispatch.TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops[str(func)] += 1
        return func(*args, **(kwargs or {}))


def _saved_tensors(fn: Any) -> list[Any]:
    saved: list[Any] = []

    def pack(t: Any) -> Any:
        saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return saved


def _casts_of(weight: Any, calls: int, *, grad: bool = True) -> int:
    """How many copies of `weight` `calls` matmuls in one autocast region make."""
    x = torch.randn(2, weight.shape[1])
    with (
        torch.set_grad_enabled(grad),
        _CountOps() as counter,
        torch.autocast("cpu", dtype=torch.bfloat16),
    ):
        for _ in range(calls):
            F.linear(x, weight)
    # Each call casts its input x once; the rest are casts of the weight.
    return counter.ops["aten._to_copy.default"] - calls


def test_autocast_casts_a_parameter_once_per_region_and_an_activation_every_time() -> None:
    # autocast-weight-cast-cached-once
    weight = torch.nn.Parameter(torch.randn(8, 8))
    assert _casts_of(weight, calls=3) == 1
    assert _casts_of(weight.detach(), calls=3) == 3  # not a leaf that requires grad: no cache


def test_autocast_caches_parameter_casts_under_no_grad_too() -> None:
    # autocast-inference-weight-copies
    weight = torch.nn.Parameter(torch.randn(8, 8))
    assert _casts_of(weight, calls=3, grad=False) == 1


def test_gradients_keep_the_parameters_dtype_under_autocast() -> None:
    # autocast-grads-stay-fp32
    model = torch.nn.Linear(8, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(torch.randn(2, 8))
    assert out.dtype == torch.bfloat16
    out.float().sum().backward()
    assert model.weight.dtype == model.weight.grad.dtype == torch.float32


def test_the_cache_is_cleared_at_exit_but_autograd_keeps_the_saved_cast() -> None:
    # autocast-cache-cleared-copies-saved
    weight = torch.nn.Parameter(torch.randn(8, 4))
    x = torch.randn(2, 4, requires_grad=True)

    outputs: list[Any] = []

    def forward() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            outputs.append(F.linear(x, weight))

    saved = _saved_tensors(forward)
    assert any(t.dtype == torch.bfloat16 and t.shape == (4, 8) for t in saved)  # the cast, .t()
    assert _casts_of(weight, calls=1) == 1  # a new region casts again: the old cache is gone
    assert "clear_autocast_cache" in inspect.getsource(torch.amp.autocast_mode.autocast.__exit__)


def test_cuda_autocast_lists_layer_norm_as_a_float32_op() -> None:
    # autocast-layer-norm-fp32-output
    header = (TORCH_DIR / "include/ATen/autocast_mode.h").read_text()
    fp32_list = header.split("#define AT_FORALL_FP32(_)")[1].split("#define")[0]
    assert {"layer_norm", "native_layer_norm", "rms_norm", "group_norm"} <= set(
        re.findall(r"_\((\w+)\)", fp32_list)
    )
    # On the CPU layer_norm is not on the list: the output keeps the lower precision.
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert F.layer_norm(torch.randn(2, 8, dtype=torch.bfloat16), (8,)).dtype == torch.bfloat16


def test_cross_entropy_saves_one_log_softmax_output_and_not_the_logits() -> None:
    # lm-head-cross-entropy-saves-log-probs
    logits = torch.randn(6, 50, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, 50, (6,))
    saved = _saved_tensors(lambda: F.cross_entropy(logits.float(), labels))
    full = [t for t in saved if t.shape == logits.shape]
    assert {t.dtype for t in full} == {torch.float32}
    assert len({t.data_ptr() for t in full}) == 1  # log_softmax's result, reused by nll_loss
    assert all(t.data_ptr() != logits.data_ptr() for t in full)


def test_head_tail_load_balancer_gives_rank_1_chunks_1_and_6() -> None:
    # context-parallel-head-tail-chunks
    from torch.distributed.tensor.experimental._context_parallel import _load_balancer

    balancer = _load_balancer._create_default_load_balancer(32, 4, "cpu")
    assert isinstance(balancer, _load_balancer._HeadTailLoadBalancer)
    order = balancer._generate_indices()[0].tolist()
    assert order[8:16] == [*range(4, 8), *range(24, 28)]  # 4-token chunks 1 and 6


def test_context_parallel_gathers_kv_by_default_and_merges_in_fp32() -> None:
    # context-parallel-allgather-kv-bytes, context-parallel-merges-with-lse
    from torch.distributed.tensor.experimental._context_parallel import _attention

    options = _attention._ContextParallelOptions()
    assert options.rotate_method is _attention._RotateMethod.ALL_GATHER
    assert options.convert_to_f32 is True
    assert 'the default rotate method is "allgather"' in _attention.set_rotate_method.__doc__
    gather = inspect.getsource(_attention._AllGatherRotater)
    assert "all_gather_single" in gather
    ring = inspect.getsource(_attention._templated_ring_attention)
    assert "torch.cat([key.flatten(), value.flatten()])" in ring
    merge = inspect.getsource(_attention._SDPAMerger._merge_one)
    assert "F.sigmoid(block_lse - lse) * (out - block_out)" in merge


def test_context_parallel_clones_every_buffer_it_must_restore() -> None:
    # context-parallel-restores-buffers
    from torch.distributed.tensor.experimental._context_parallel import _attention

    source = inspect.getsource(_attention.context_parallel)
    assert "None if b in no_restore_buffers else b.clone() for b in buffers" in source
    assert "buffer.resize_(shard.shape)" in source
    # Shrinking with resize_ keeps the buffer's storage at its old size.
    buffer = torch.arange(1024.0)
    buffer.resize_(256)
    assert buffer.untyped_storage().nbytes() == 1024 * 4


def test_cuda_ipc_docs_and_sources_say_what_the_questions_quote() -> None:
    # cuda-ipc-producer-keeps-alive, cuda-ipc-collect, cuda-ipc-slice-shares-storage,
    # cuda-ipc-fork-reinit, cuda-ipc-freed-block-limbo
    from torch.multiprocessing import reductions

    assert "and for CUDA tensors" in torch.Tensor.share_memory_.__doc__
    doc = " ".join(torch.cuda.ipc_collect.__doc__.split())
    assert "Force collects GPU memory after it has been released by CUDA IPC" in doc
    assert "shared memory file used for reference counting" in doc
    reduce = inspect.getsource(reductions.reduce_tensor)
    assert "storage._share_cuda_()" in reduce
    assert "storage_size_bytes,  # size(in bytes) of the storage" in reduce
    assert "Cannot re-initialize CUDA in forked subprocess" in inspect.getsource(
        torch.cuda._lazy_init
    )
    header = (TORCH_DIR / "include/torch/csrc/CudaIPCTypes.h").read_text()
    assert "All to be deleted data blocks with non zero reference counter goes there" in header


@pytest.fixture
def one_rank_group(tmp_path: Path) -> Any:
    """A one-process gloo group and a CPU device mesh, enough for FSDP2 to shard and run."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    try:
        yield init_device_mesh("cpu", (1,))
    finally:
        dist.destroy_process_group()


def test_fsdp2_shards_dim0_and_keeps_only_the_root_unsharded_after_forward(
    one_rank_group: Any,
) -> None:
    # fsdp2-dtensor-dim0-shards, fsdp2-reshard-after-forward-default, fsdp2-mixed-precision-master
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.tensor import DTensor, Shard

    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 8))
    fully_shard(model[0], mesh=one_rank_group, mp_policy=policy)
    fully_shard(model, mesh=one_rank_group, mp_policy=policy)  # model[1] belongs to the root
    sharded = model[0].weight
    assert isinstance(sharded, DTensor) and sharded.placements == (Shard(0),)
    assert sharded.dtype == torch.float32
    out = model(torch.randn(2, 8))
    assert out.dtype == torch.bfloat16
    assert isinstance(model[0].weight, DTensor)  # the block resharded after forward
    root_weight = model[1].weight
    assert not isinstance(root_weight, DTensor) and root_weight.dtype == torch.bfloat16
    out.float().sum().backward()
    grad = model[0].weight.grad
    assert isinstance(grad, DTensor) and grad.dtype == torch.float32


def test_fsdp2_docstrings_say_what_the_questions_quote() -> None:
    # fsdp2-reshard-after-forward-default, fsdp2-forward-prefetch-two, fsdp2-mixed-precision-master
    from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard

    def text(obj: Any) -> str:
        return " ".join(obj.__doc__.split())

    assert (
        "If ``None``, it is set to ``True`` for non-root modules and ``False`` for root modules"
        in text(fully_shard)
    )
    prefetch = text(FSDPModule.set_modules_to_forward_prefetch)
    assert "except the prefetched all-gather is issued earlier from the CPU" in prefetch
    assert "at least length two is required for more aggressive overlap" in prefetch
    assert "will use more reserved memory" in prefetch
    policy = text(MixedPrecisionPolicy)
    assert "The optimizer step uses the sharded parameter in the original dtype" in policy
    assert "does not require any extra memory to keep a high-precision copy" in policy
