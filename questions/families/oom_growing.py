"""`oom-under-cap`, workload `growing`: a tensor that grows step by step, each new one
replacing the last, under a memory-fraction cap. Each freed tensor's segment stays cached
until the cap forces a release-and-retry (``num_alloc_retries``); the questions ask what
those retries released (``reserved_bytes.all.freed``) and what stays reserved."""

from __future__ import annotations

from typing import Any, Final

from bot.i18n import Localized, Text
from questions.families.misconceptions import (
    allocated_not_reserved,
    freed_memory_returns,
    peak_not_current,
)
from questions.families.model import Candidate
from questions.families.narrate import FREED, NUM_RETRIES, RESERVED, api, conclusion, setup, size
from questions.families.sizes import MIB
from questions.families.trace import (
    TOTAL_MEMORY,
    Op,
    TraceRun,
    free,
    malloc,
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
GROWING_PROMPT = Text(
    "{settings}; on an empty GPU, x0 = {s0} (uint8), then x1 to x{last}, each {step} larger "
    "than the one before and each followed by del of the previous one. What does {api} "
    "report then?"
)


def growing_inputs(ops: list[Op], ask: str, cap: int) -> dict[str, Any]:
    return trace_inputs(ops, ask, memory_fraction=cap / TOTAL_MEMORY)


def growing_sizes(params: dict[str, Any], cap: int) -> list[int]:
    """n sizes in steps of cap/128 (whole MiB, distinct for distinct parameters), the
    largest at most cap/2 so that two live tensors always fit: no OOM, only retries."""
    unit = cap // 128
    first, step, n = (int(x) for x in params["shape"])
    return [(first + i * step) * unit for i in range(n)]


def growing_ops(sizes: list[int]) -> list[Op]:
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
        conclusion(ask),
    ]


def _growing_candidates(
    ask: str, inputs: dict[str, Any], run: TraceRun, cap: int
) -> list[Candidate]:
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
    raise ValueError(f"oom-under-cap asks no {ask!r} of the growing tensor")


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


def growing(
    params: dict[str, Any],
) -> tuple[dict[str, Any], Localized, list[Localized], int, list[Candidate]]:
    """The growing tensor's inputs, prompt, steps, answer and candidates."""
    cap, ask = int(params["cap"]) * MIB, str(params["ask"])
    sizes = growing_sizes(params, cap)
    inputs = growing_inputs(growing_ops(sizes), ask, cap)
    run = run_trace(inputs)
    prompt = GROWING_PROMPT.fill(
        settings=setup("", cap=cap),
        s0=size(sizes[0]),
        last=str(len(sizes) - 1),
        step=size(sizes[1] - sizes[0]),
        api=api(ask),
    )
    return (
        inputs,
        prompt,
        _growing_steps(run, cap, ask),
        run.value(ask),
        _growing_candidates(ask, inputs, run, cap),
    )
