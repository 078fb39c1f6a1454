"""Family `oom-under-cap`: requests under ``set_per_process_memory_fraction``.

When no cached block fits and a new segment would pass the cap, the allocator frees the
cached, entirely free segments and retries (``num_alloc_retries`` counts every retry, even
one that succeeds); only when that fails too is it an OOM (``num_ooms``). The cap applies
to reserved memory, whole segments and cached blocks included (spec 1.8-1.9).

Two workloads: a loop that keeps `n` equal tensors (how many requests fail), and a tensor
that grows step by step, each new one replacing the last (how often the cache is
released, and what stays reserved).
"""

from __future__ import annotations

from typing import Any, Final

from bot.i18n import Localized, Text
from gpu_runner.sim import OutOfMemoryError
from questions.families.misconceptions import allocated_not_reserved
from questions.families.model import Candidate, Draft, Style, trace_family
from questions.families.narrate import (
    ALLOCATOR_DOCS,
    FREED,
    NUM_OOMS,
    RESERVED,
    STATS_DOCS,
    TENSORS,
    api,
    conclusion,
    setup,
    size,
)
from questions.families.oom_growing import GROWING, growing, growing_inputs
from questions.families.sizes import MIB
from questions.families.space import Space, grid
from questions.families.trace import (
    MAX_OPS,
    TraceRun,
    malloc,
    new_allocator,
    run_trace,
    trace_draft,
)

SPACE = Space(
    (
        grid(
            "loop",
            cap=(70, 90, 110, 130, 150),  # MiB: not whole 20 MiB segments
            s=(3, 4, 5, 6, 7, 9),  # MiB (plus LOOP_JITTER): several share a 20 MiB segment
            extra=(1, 2, 3, 5, 8, 12),
            ask=(NUM_OOMS, RESERVED, TENSORS),
        ),
        grid(
            "growing",
            cap=(256, 384, 512, 640, 768, 896, 1024),
            shape=GROWING,
            # num_alloc_retries itself is a small count whose misconceptions all lie
            # around it (0, 1, every step): the retries are asked as the bytes they released
            ask=(FREED, RESERVED),
        ),
    )
)
CAP_DOCS: Final = (
    "https://pytorch.org/docs/stable/generated/torch.cuda.set_per_process_memory_fraction.html"
)
LOOP_JITTER: Final = 1000  # bytes: the tensors are not whole MiB
LOOP_PROMPT = Text(
    "{settings}; on an empty GPU, {n} uint8 tensors of {s} are allocated and all kept, each "
    "OOM caught and the loop going on. What does {api} report then?"
)


def _per_segment(run: TraceRun) -> int:
    fit = sum(1 for r in run.results if not r.oom)
    return -(-fit // max(1, run.stats["segment.all.current"]))


def _loop_steps(run: TraceRun, n: int, tensor: int, cap: int, ask: str) -> list[Localized]:
    fit = sum(1 for r in run.results if not r.oom)
    segments = run.stats["segment.all.current"]
    return [
        Text(
            "Each {s} tensor sits in a {g} segment, {p} per segment. The {c} cap allows "
            "{k} segments, so {f} of the {n} requests succeed and {o} fail.",
            s=size(tensor),
            g=size(run.results[0].grown),
            p=_per_segment(run),
            c=size(cap),
            k=segments,
            f=fit,
            n=n,
            o=n - fit,
        ),
        conclusion(ask),
    ]


def _loop_candidates(run: TraceRun, n: int, tensor: int, cap: int, ask: str) -> list[Candidate]:
    fit = sum(1 for r in run.results if not r.oom)
    grown = run.results[0].grown
    if ask == TENSORS:
        return _tensor_candidates(run, n, tensor, cap)
    if ask == RESERVED:
        return [
            allocated_not_reserved(run.stats["allocated_bytes.all.current"]),
            Candidate(
                "reserved-fills-the-cap",
                cap,
                Text("as if reserved memory grew to the cap; only whole segments fit."),
            ),
            Candidate(
                "failed-requests-reserve",
                -(-n // _per_segment(run)) * grown,
                Text("segments for failed requests too; an OOM reserves nothing."),
            ),
            Candidate(
                "requested-bytes-of-all",
                n * tensor,
                Text("every request's bytes, failed ones included."),
            ),
            Candidate(
                "requested-bytes-of-successes",
                fit * tensor,
                Text("the successful requests' bytes; whole segments are reserved."),
            ),
            Candidate(
                "one-segment-per-tensor",
                fit * grown,
                Text("a segment per successful tensor; {p} share one.", p=_per_segment(run)),
            ),
            Candidate(
                "segments-round-to-2mib",
                fit * -(-tensor // (2 * MIB)) * 2 * MIB,
                Text("a 2 MiB-rounded segment each; below 10 MiB they share 20 MiB."),
            ),
        ]
    return [
        Candidate(
            "cap-ignored",
            0,
            Text("ignores the cap; the allocator may not reserve beyond it."),
        ),
        Candidate(
            "cap-counts-allocated-only",
            max(0, n - cap // tensor),
            Text("fits the tensors' own bytes under the cap; whole segments count."),
        ),
        Candidate(
            "one-segment-per-tensor",
            max(0, n - cap // (20 * MIB)),
            Text("gives each tensor its own 20 MiB segment; {p} share one.", p=_per_segment(run)),
        ),
        Candidate(
            "first-oom-stops-the-loop",
            1,
            Text("stops at the first OOM; the loop catches it and goes on."),
        ),
        Candidate(
            "padding-ignored",
            max(0, n - cap // (20 * MIB) * (20 * MIB // (tensor - LOOP_JITTER))),
            Text(
                "packs whole MiB into 20 MiB; with the extra bytes {p} fit.",
                p=_per_segment(run),
            ),
        ),
        Candidate(
            "leftover-filled-by-bytes",
            max(0, n - fit - (cap - run.stats[RESERVED]) // tensor),
            Text(
                "fills the cap's last {x} by bytes; a new segment needs 20 MiB.",
                x=size(cap - run.stats[RESERVED]),
            ),
        ),
        Candidate(
            "every-request-counted",
            n,
            Text("counts every request; num_ooms counts only the failed ones."),
        ),
        Candidate(
            "successes-counted",
            fit,
            Text("counts the requests that succeeded; num_ooms counts failures."),
        ),
    ]


def _loop_fit(tensor: int, cap: int) -> int:
    """How many tensors of `tensor` bytes fit under the cap (a probe on the simulator)."""
    alloc = new_allocator(growing_inputs([malloc("t", tensor)], NUM_OOMS, cap))
    for fit in range(MAX_OPS):
        try:
            alloc.malloc(tensor)
        except OutOfMemoryError:
            return fit
    raise AssertionError(f"{MAX_OPS} tensors of {tensor} bytes fit under {cap}")


def _tensor_candidates(run: TraceRun, n: int, tensor: int, cap: int) -> list[Candidate]:
    fit = sum(1 for r in run.results if not r.oom)
    two_mib = -(-tensor // (2 * MIB)) * 2 * MIB
    return [
        Candidate(
            "cap-counts-allocated-only",
            cap // tensor,
            Text("fits the tensors' own bytes under the cap; whole segments count."),
        ),
        Candidate(
            "one-tensor-per-segment",
            cap // (20 * MIB),
            Text("one tensor per 20 MiB segment; {p} share one.", p=_per_segment(run)),
        ),
        Candidate(
            "segments-round-to-2mib",
            cap // two_mib,
            Text("a 2 MiB-rounded segment each; below 10 MiB they share 20 MiB."),
        ),
        Candidate(
            "every-request-counted",
            n,
            Text("counts every request, the failed ones too."),
        ),
        Candidate(
            "segments-counted",
            run.stats["segment.all.current"],
            Text("counts the segments; allocation.all.current counts the blocks in them."),
        ),
        Candidate(
            "failures-counted",
            n - fit,
            Text("counts the failed requests (num_ooms), not the live tensors."),
        ),
        Candidate(
            "padding-ignored",
            cap // (20 * MIB) * (20 * MIB // (tensor - LOOP_JITTER)),
            Text(
                "packs whole MiB into 20 MiB; with the extra bytes {p} fit.",
                p=_per_segment(run),
            ),
        ),
        Candidate(
            "leftover-filled-by-bytes",
            fit + (cap - run.stats[RESERVED]) // tensor,
            Text(
                "fills the cap's last {x} by bytes; a new segment needs 20 MiB.",
                x=size(cap - run.stats[RESERVED]),
            ),
        ),
    ]


def _build_loop(params: dict[str, Any]) -> Draft:
    cap, ask = int(params["cap"]) * MIB, str(params["ask"])
    tensor = int(params["s"]) * MIB + LOOP_JITTER
    n = _loop_fit(tensor, cap) + int(params["extra"])
    inputs = growing_inputs([malloc(f"t{i}", tensor) for i in range(n)], ask, cap)
    run = run_trace(inputs)
    prompt = LOOP_PROMPT.fill(settings=setup("", cap=cap), n=n, s=size(tensor), api=api(ask))
    return _draft(
        inputs,
        prompt,
        _loop_steps(run, n, tensor, cap, ask),
        run.value(ask),
        _loop_candidates(run, n, tensor, cap, ask),
    )


def _draft(
    inputs: dict[str, Any],
    prompt: Localized,
    steps: list[Localized],
    answer: int,
    candidates: list[Candidate],
) -> Draft:
    return trace_draft(
        "oom-debugging",
        3,
        inputs,
        prompt,
        steps,
        answer,
        candidates,
        (ALLOCATOR_DOCS, CAP_DOCS, STATS_DOCS),
        style=Style.EXACT_SIZE if inputs["ask"] in (RESERVED, FREED) else Style.COUNT,
    )


def build(variant: str, params: dict[str, Any]) -> Draft:
    if variant == "loop":
        return _build_loop(params)
    return _draft(*growing(params))


FAMILY = trace_family(
    id="oom-under-cap",
    topic="oom-debugging",
    difficulty=(3, 3),
    description=(
        "Requests under a memory-fraction cap: how many fail (num_ooms) and how many fit, "
        "what the release-and-retry path gives back (num_alloc_retries explained), what "
        "stays reserved"
    ),
    space=SPACE,
    build=build,
    rank_weights=(1.25, 0.5, 0.45, 1.8),  # counts and caps: misconceptions crowd the middle
)
