"""Localized shared by the trace families: the setup, the ops, the asked statistic, and a
short account of what the allocator did at each op (rendered from a `TraceRun`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from bot.i18n import Join, Localized, Text
from questions.families.assemble import ANSWER
from questions.families.sizes import ExactSize
from questions.families.trace import OpResult

RESERVED: Final = "reserved_bytes.all.current"
ALLOCATED: Final = "allocated_bytes.all.current"
SEGMENTS: Final = "segment.all.current"
INACTIVE_SPLIT: Final = "inactive_split_bytes.all.current"
NUM_OOMS: Final = "num_ooms"
NUM_RETRIES: Final = "num_alloc_retries"
TENSORS: Final = "allocation.all.current"  # live blocks: the tensors that were allocated
FREED: Final = "reserved_bytes.all.freed"  # what reserved memory gave back so far

ASK_API: Final = {
    RESERVED: "torch.cuda.memory_reserved()",
    ALLOCATED: "torch.cuda.memory_allocated()",
}

ALLOCATOR_DOCS: Final = "https://pytorch.org/docs/stable/notes/cuda.html#memory-management"
ALLOCATOR_SOURCE: Final = (
    "https://github.com/pytorch/pytorch/blob/main/c10/cuda/CUDACachingAllocator.cpp"
)
CONF_DOCS: Final = (
    "https://pytorch.org/docs/stable/notes/cuda.html"
    "#optimizing-memory-usage-with-pytorch-cuda-alloc-conf"
)
STATS_DOCS: Final = "https://pytorch.org/docs/stable/generated/torch.cuda.memory_stats.html"


def api(ask: str) -> str:
    return ASK_API.get(ask, f'memory_stats()["{ask}"]')


def size(nbytes: int) -> ExactSize:
    return ExactSize(nbytes)


def verbatim(text: str) -> Join:
    """Text shown as it is in every locale (code, settings)."""
    return Join((text,), "")


def setup(conf: str, cap: int | None = None) -> Localized:
    """ "Default allocator settings" or the conf string, plus the memory cap if any."""
    text: Localized = (
        verbatim(f"PYTORCH_CUDA_ALLOC_CONF={conf}") if conf else Text("Default allocator settings")
    )
    if cap is not None:
        text = Text(
            "{settings}, a cap of {cap} (set_per_process_memory_fraction)",
            settings=text,
            cap=size(cap),
        )
    return text


def op_text(op: list[Any] | tuple[Any, ...]) -> Localized:
    if op[0] == "malloc":
        return Join((str(op[1]), " = ", size(op[2])), "")
    if op[0] == "free":
        return verbatim(f"del {op[1]}")
    return verbatim("empty_cache()")


def ops_text(ops: Iterable[list[Any] | tuple[Any, ...]]) -> Localized:
    return Join(op_text(op) for op in ops)


def trace_prompt(settings: Localized, ops: Localized, ask: str) -> Localized:
    """ "<settings>; uint8 tensors on an empty GPU: <ops>. What does <api> report then?"."""
    return Text(
        "{settings}; uint8 tensors on an empty GPU: {ops}. What does {api} report then?",
        settings=settings,
        ops=ops,
        api=api(ask),
    )


def ops_prompt(
    ops: Iterable[list[Any] | tuple[Any, ...]], ask: str, *, conf: str = ""
) -> Localized:
    """`trace_prompt` with the settings of `conf` and the ops as they run."""
    return trace_prompt(setup(conf), ops_text(ops), ask)


def conclusion(ask: str) -> Localized:
    """The last step: "So <api> = <the answer as the choices show it>."."""
    return Text("So {api} = {value}.", api=api(ask), value=ANSWER)


def narrate(result: OpResult, *, expandable: bool = False) -> Localized:
    """What one op did, in a few words: "a: new 20 MiB segment"."""
    kind = result.op[0]
    if kind == "free":
        return Text("del {name}: cached", name=result.name)
    if kind == "empty_cache":
        if result.released:
            return Text("empty_cache() releases {n}", n=size(result.released))
        return Text("empty_cache() releases nothing")
    head = result.name
    if result.oom and not result.released:
        return Text("{head}: over the cap, OOM", head=head)
    if result.oom:
        return Text("{head}: OOM even after releasing {n}", head=head, n=size(result.released))
    if result.reused:
        return Text("{head}: reuses a cached block", head=head)
    new = (
        Text("maps {n} more", n=size(result.grown))
        if expandable
        else Text("new {n} segment", n=size(result.grown))
    )
    if result.retried:
        return Text(
            "{head}: releases {r} of cache, retries: {new}",
            head=head,
            r=size(result.released),
            new=new,
        )
    return Join((head, ": ", new), "")


def narrate_run(results: Iterable[OpResult], *, expandable: bool = False) -> Localized:
    """Every op's account, as one sentence."""
    return Join((narrate(r, expandable=expandable) for r in results), end=".")


def narrated_steps(results: Iterable[OpResult], ask: str) -> tuple[Localized, Localized]:
    """A trace explained op by op (`narrate_run`), then its `conclusion`."""
    return (narrate_run(results), conclusion(ask))
