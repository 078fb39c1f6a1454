"""Wording shared by the trace families: the setup, the ops, the asked statistic, and a
short account of what the allocator did at each op (rendered from a `TraceRun`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from bot.domain import Locale
from questions.families.model import Text
from questions.families.trace import OpResult
from questions.families.units import exact_size

RESERVED: Final = "reserved_bytes.all.current"
ALLOCATED: Final = "allocated_bytes.all.current"
SEGMENTS: Final = "segment.all.current"
INACTIVE_SPLIT: Final = "inactive_split_bytes.all.current"
NUM_OOMS: Final = "num_ooms"
NUM_RETRIES: Final = "num_alloc_retries"

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


def size(nbytes: int) -> Text:
    return Text(exact_size(nbytes, Locale.EN), exact_size(nbytes, Locale.EL))


def setup(conf: str, cap: int | None = None) -> Text:
    """ "Default allocator settings" or the conf string, plus the memory cap if any."""
    text = (
        Text("PYTORCH_CUDA_ALLOC_CONF={conf}", "PYTORCH_CUDA_ALLOC_CONF={conf}").fill(conf=conf)
        if conf
        else Text("Default allocator settings", "Προεπιλεγμένες ρυθμίσεις allocator")
    )
    if cap is not None:
        text = Text(
            "{text}, a {cap} cap (set_per_process_memory_fraction)",
            "{text}, όριο {cap} (set_per_process_memory_fraction)",
        ).fill(text=text, cap=size(cap))
    return text


def op_text(op: list[Any] | tuple[Any, ...]) -> Text:
    if op[0] == "malloc":
        return Text("{name} = {size}", "{name} = {size}").fill(name=op[1], size=size(op[2]))
    if op[0] == "free":
        return Text(f"del {op[1]}", f"del {op[1]}")
    return Text("empty_cache()", "empty_cache()")


def join(parts: Iterable[Text], end: str = "") -> Text:
    """Parts joined by "; " (en) and "· " (el; ";" is the Greek question mark)."""
    items = list(parts)
    return Text("; ".join(p.en for p in items) + end, "· ".join(p.el for p in items) + end)


def trace_prompt(settings: Text, ops: Text, ask: str) -> Text:
    """ "<settings>; uint8 tensors on the GPU: <ops>. What does <api> report then?"."""
    return Text(
        "{settings}; uint8 tensors on an empty GPU: {ops}. What does {api} report then?",
        "{settings}· τανυστές uint8 σε άδεια GPU: {ops}. Τι αναφέρει μετά το {api};",
    ).fill(settings=settings, ops=ops, api=api(ask))


def conclusion(ask: str, value: Text | str) -> Text:
    """The last step: "So <api> = <value>."."""
    return Text("So {api} = {v}.", "Άρα {api} = {v}.").fill(api=api(ask), v=value)


def pool(small: bool) -> str:
    return "small pool" if small else "large pool"


def narrate(result: OpResult, *, expandable: bool = False) -> Text:
    """What one op did, in a few words: "a = 5 MiB: new 20 MiB segment (large pool)"."""
    head = op_text(result.op)
    if result.op[0] == "free":
        return Text("{head}: block cached", "{head}: το μπλοκ μένει στην cache").fill(head=head)
    if result.op[0] == "empty_cache":
        if result.released:
            return Text("{head} releases {n}", "{head}: αποδεσμεύει {n}").fill(
                head=head, n=size(result.released)
            )
        return Text("{head} releases nothing", "{head}: δεν αποδεσμεύει τίποτα").fill(head=head)
    if result.oom and not result.released:
        return Text(
            "{head}: over the cap, nothing cached to release: OOM",
            "{head}: πάνω από το όριο, τίποτα στην cache για αποδέσμευση: OOM",
        ).fill(head=head)
    if result.oom:
        return Text(
            "{head}: OOM, even after releasing {n} of cache",
            "{head}: OOM, ακόμη και μετά την αποδέσμευση {n} της cache",
        ).fill(head=head, n=size(result.released))
    if result.reused:
        return Text(
            "{head}: fits a cached free block", "{head}: χωρά σε ελεύθερο μπλοκ της cache"
        ).fill(head=head)
    new = (
        Text("maps {n} more", "χαρτογραφεί (maps) {n} ακόμη")
        if expandable
        else Text("new {n} segment", "νέο τμήμα {n}")
    ).fill(n=size(result.grown))
    if result.retried:
        return Text(
            "{head}: no room; releasing {r} of cache, then {new}",
            "{head}: δεν χωρά· αποδεσμεύονται {r} της cache, μετά {new}",
        ).fill(head=head, r=size(result.released), new=new)
    return Text("{head}: {new} ({pool})", "{head}: {new} ({pool})").fill(
        head=head, new=new, pool=pool(result.small)
    )


def narrate_run(results: Iterable[OpResult], *, expandable: bool = False) -> Text:
    """Every op's account, as one sentence."""
    return join((narrate(r, expandable=expandable) for r in results), end=".")
