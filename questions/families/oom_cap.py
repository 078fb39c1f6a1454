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

from bot.formats import Number
from bot.i18n import Localized, Text
from gpu_runner.sim import OutOfMemoryError
from questions.families.misconceptions import (
    allocated_not_reserved,
    freed_memory_returns,
    peak_not_current,
)
from questions.families.model import Candidate, Draft, Family, Style
from questions.families.narrate import (
    ALLOCATOR_DOCS,
    FREED,
    NUM_OOMS,
    NUM_RETRIES,
    RESERVED,
    STATS_DOCS,
    TENSORS,
    api,
    conclusion,
    setup,
    size,
)
from questions.families.sizes import MIB
from questions.families.space import Space, grid
from questions.families.trace import (
    MAX_OPS,
    TOTAL_MEMORY,
    TRACE_DEMO,
    Op,
    TraceRun,
    free,
    malloc,
    new_allocator,
    run_trace,
    trace_inputs,
)

# (first, step, n): x0 = cap * first / 128, each next tensor cap * step / 128 larger, n
# tensors. The shapes whose trace releases the cache at least twice (the count does not
# depend on the cap: every size scales with it); tests/questions/families checks them.
GROWING: Final = (
    (8, 2, 12), (8, 2, 14), (8, 3, 12), (8, 3, 14), (12, 1, 14), (12, 2, 12), (12, 2, 14),
    (12, 3, 10), (12, 3, 12), (12, 3, 14), (16, 1, 12), (16, 1, 14), (16, 2, 10),
    (16, 2, 12), (16, 2, 14), (16, 3, 8), (16, 3, 10), (16, 3, 12), (16, 3, 14),
    (20, 1, 10), (20, 1, 12), (20, 1, 14), (20, 2, 10), (20, 2, 12), (20, 2, 14),
    (20, 3, 8), (20, 3, 10), (20, 3, 12), (20, 3, 14), (24, 1, 8), (24, 1, 10),
    (24, 1, 12), (24, 1, 14), (24, 2, 8), (24, 2, 10), (24, 2, 12), (24, 2, 14),
    (24, 3, 8), (24, 3, 10), (24, 3, 12), (24, 3, 14),
)  # fmt: skip
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
GROWING_PROMPT = Text(
    "{settings}; on an empty GPU, x0 = {s0} (uint8), then x1 to x{last}, each {step} larger "
    "than the one before and each followed by del of the previous one. What does {api} "
    "report then?"
)


def _inputs(ops: list[Op], ask: str, cap: int) -> dict[str, Any]:
    return trace_inputs(ops, ask, memory_fraction=cap / TOTAL_MEMORY)


def _per_segment(run: TraceRun) -> int:
    fit = sum(1 for r in run.results if not r.oom)
    return -(-fit // max(1, run.stats["segment.all.current"]))


def _count_or_size(ask: str, value: int) -> Localized:
    return size(value) if ask in (RESERVED, FREED) else Number(value)


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
        conclusion(ask, _count_or_size(ask, run.value(ask))),
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
    alloc = new_allocator(_inputs([malloc("t", tensor)], NUM_OOMS, cap))
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
    inputs = _inputs([malloc(f"t{i}", tensor) for i in range(n)], ask, cap)
    run = run_trace(inputs)
    prompt = LOOP_PROMPT.fill(settings=setup("", cap=cap), n=n, s=size(tensor), api=api(ask))
    return _draft(
        inputs,
        prompt,
        _loop_steps(run, n, tensor, cap, ask),
        run.value(ask),
        _loop_candidates(run, n, tensor, cap, ask),
    )


def _growing_sizes(params: dict[str, Any], cap: int) -> list[int]:
    """n sizes in steps of cap/128 (whole MiB, distinct for distinct parameters), the
    largest at most cap/2 so that two live tensors always fit: no OOM, only retries."""
    unit = cap // 128
    first, step, n = (int(x) for x in params["shape"])
    return [(first + i * step) * unit for i in range(n)]


def _growing_ops(sizes: list[int]) -> list[Op]:
    ops = [malloc("x0", sizes[0])]
    for i, nbytes in enumerate(sizes[1:], start=1):
        ops += [malloc(f"x{i}", nbytes), free(f"x{i - 1}")]
    return ops


def _growing_steps(run: TraceRun, cap: int, ask: str) -> list[Localized]:
    retries = run.stats[NUM_RETRIES]
    released = sum(r.released for r in run.results)
    return [
        Text(
            "Each freed tensor's segment stays cached but is too small for the next. When "
            "live, cached and new segments would pass the {c} cap, the allocator empties "
            "the cache and retries.",
            c=size(cap),
        ),
        Text.n(
            "That happens {count} time here, releasing {r}.",
            "That happens {count} times here, releasing {r}.",
            retries,
            r=size(released),
        ),
        conclusion(ask, _count_or_size(ask, run.value(ask))),
    ]


def _growing_candidates(
    ask: str, inputs: dict[str, Any], run: TraceRun, cap: int
) -> list[Candidate]:
    retries = run.stats[NUM_RETRIES]
    steps = sum(1 for op in inputs["ops"] if op[0] == "malloc") - 1
    if ask == FREED:
        return _freed_candidates(inputs, run, cap)
    if ask == RESERVED:
        released = sum(r.released for r in run.results)
        last_two = [int(op[2]) for op in inputs["ops"] if op[0] == "malloc"][-2:]
        return [
            Candidate(
                "retry-keeps-the-cache",
                run.stats[RESERVED] + released,
                Text("keeps every freed segment; the retries released {r}.", r=size(released)),
            ),
            freed_memory_returns(inputs),
            allocated_not_reserved(run.stats["allocated_bytes.all.current"]),
            Candidate(
                "reserved-fills-the-cap",
                cap,
                Text("as if reserved memory grew to the cap."),
            ),
            peak_not_current(run.stats, RESERVED),
            Candidate(
                "last-two-tensors",
                sum(last_two),
                Text("the last two tensors only; a cached segment stays until a retry."),
            ),
            Candidate(
                "cap-minus-live",
                cap - run.stats["allocated_bytes.all.current"],
                Text("what the cap leaves free; reserved is what the allocator holds."),
            ),
        ]
    return [
        Candidate(
            "only-failed-retries-counted",
            run.stats[NUM_OOMS],
            Text("counts only failed retries (OOMs); a successful one counts too."),
        ),
        Candidate(
            "retry-at-every-step",
            steps,
            Text("a retry at every step; one comes only at the cap."),
        ),
        Candidate(
            "both-release-steps-counted",
            2 * retries,
            Text("counts two per retry; each release-and-retry counts once."),
        ),
        Candidate(
            "cache-released-once",
            1,
            Text("releases the cache once for good; it fills up again."),
        ),
        Candidate(
            "segments-released-counted",
            run.stats["num_device_free"],
            Text("counts the segments released; one retry may release several."),
        ),
        Candidate(
            "cuda-mallocs-counted",
            run.stats["num_device_alloc"],
            Text("counts cudaMalloc calls, not release-and-retry passes."),
        ),
        Candidate(
            "steps-without-retry",
            steps - retries,
            Text("counts the steps that needed no retry."),
        ),
    ]


def _freed_candidates(inputs: dict[str, Any], run: TraceRun, cap: int) -> list[Candidate]:
    sizes = [int(op[2]) for op in inputs["ops"] if op[0] == "malloc"]
    segments = [r.grown for r in run.results if r.op[0] == "malloc"]
    released = sum(r.released for r in run.results)
    retried = [r for r in run.results if r.retried]
    return [
        Candidate(
            "nothing-released",
            0,
            Text("as if the cap only refused requests; a retry first releases the cache."),
        ),
        Candidate(
            "every-freed-segment-released",
            sum(segments[:-2]),
            Text("every freed tensor's segment; some are reused or still cached at the end."),
        ),
        Candidate(
            "freed-tensors-bytes",
            sum(sizes[:-1]),
            Text("the freed tensors' bytes; whole cached segments are released."),
        ),
        Candidate(
            "one-release-only",
            retried[0].released if retried else released // 2,
            Text("the first release alone; each retry releases the cache again."),
        ),
        Candidate(
            "cap-released",
            cap * len(retried),
            Text("a whole cap per retry; a retry releases only what is cached."),
        ),
        Candidate(
            "peak-minus-current",
            run.stats[RESERVED.replace(".current", ".peak")] - run.stats[RESERVED],
            Text("the peak minus what is reserved now; releases add up over the retries."),
        ),
        Candidate(
            "live-segments-released",
            released + sum(r.grown for r in run.results[-1:]),
            Text("adds the last tensor's segment; live segments are never released."),
        ),
    ]


def _build_growing(params: dict[str, Any]) -> Draft:
    cap, ask = int(params["cap"]) * MIB, str(params["ask"])
    sizes = _growing_sizes(params, cap)
    inputs = _inputs(_growing_ops(sizes), ask, cap)
    run = run_trace(inputs)
    prompt = GROWING_PROMPT.fill(
        settings=setup("", cap=cap),
        s0=size(sizes[0]),
        last=str(len(sizes) - 1),
        step=size(sizes[1] - sizes[0]),
        api=api(ask),
    )
    return _draft(
        inputs,
        prompt,
        _growing_steps(run, cap, ask),
        run.value(ask),
        _growing_candidates(ask, inputs, run, cap),
    )


def _draft(
    inputs: dict[str, Any],
    prompt: Localized,
    steps: list[Localized],
    answer: int,
    candidates: list[Candidate],
) -> Draft:
    return Draft(
        topic="oom-debugging",
        difficulty=3,
        inputs=inputs,
        prompt=prompt,
        steps=tuple(steps),
        answer=answer,
        style=Style.EXACT_SIZE if inputs["ask"] in (RESERVED, FREED) else Style.COUNT,
        candidates=tuple(candidates),
        references=(ALLOCATOR_DOCS, CAP_DOCS, STATS_DOCS),
        demo=TRACE_DEMO,
    )


def build(variant: str, params: dict[str, Any]) -> Draft:
    return _build_loop(params) if variant == "loop" else _build_growing(params)


FAMILY = Family(
    id="oom-under-cap",
    topic="oom-debugging",
    kind="allocator-trace",
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
