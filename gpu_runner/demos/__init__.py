"""The registered demonstrations, one module each, keyed by the ids questions reference.

`default_registry()` builds the registry from the modules explicitly; nothing registers
itself on import. Demo modules import torch and matplotlib only inside `run`, so the bot
process can validate requests without loading either.
"""

from __future__ import annotations

from gpu_runner.demos._context import DemoOutput, RunContext
from gpu_runner.demos._labels import SIMULATED_DEVICE, RunKind, RunLabel
from gpu_runner.demos._registry import (
    Demo,
    DemoKind,
    DemoRequestError,
    JsonParam,
    Param,
    ParamValue,
    Registry,
    load_registry,
)

DEFAULT_REGISTRY = "gpu_runner.demos:default_registry"


def default_registry() -> Registry:
    from gpu_runner.demos import (
        activation_checkpointing,
        adam_memory_breakdown,
        allocator_trace,
        attention_memory,
        caching_allocator,
        cuda_graph_pool,
        ddp_gradient_buckets,
        empty_cache_live_tensor,
        expandable_segments,
        fragmentation,
        grad_accumulation_set_to_none,
        model_loading_mmap,
        oom_inactive_split,
        paged_attention,
        pinned_vs_pageable,
        reserved_vs_allocated,
        view_keeps_storage,
    )

    return Registry.of(
        [
            fragmentation.DEMO,
            caching_allocator.DEMO,
            oom_inactive_split.DEMO,
            expandable_segments.DEMO,
            paged_attention.DEMO,
            activation_checkpointing.DEMO,
            empty_cache_live_tensor.DEMO,
            reserved_vs_allocated.DEMO,
            adam_memory_breakdown.DEMO,
            pinned_vs_pageable.DEMO,
            view_keeps_storage.DEMO,
            cuda_graph_pool.DEMO,
            allocator_trace.DEMO,
            attention_memory.DEMO,
            ddp_gradient_buckets.DEMO,
            model_loading_mmap.DEMO,
            grad_accumulation_set_to_none.DEMO,
        ],
        source=DEFAULT_REGISTRY,
    )


__all__ = [
    "DEFAULT_REGISTRY",
    "SIMULATED_DEVICE",
    "Demo",
    "DemoKind",
    "DemoOutput",
    "DemoRequestError",
    "JsonParam",
    "Param",
    "ParamValue",
    "Registry",
    "RunContext",
    "RunKind",
    "RunLabel",
    "default_registry",
    "load_registry",
]
