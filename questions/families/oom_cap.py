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

from gpu_runner.sim import OutOfMemoryError
from questions.families.misconceptions import (
    allocated_not_reserved,
    freed_memory_returns,
)
from questions.families.model import Candidate, Draft, Family, Style, Text
from questions.families.narrate import (
    ALLOCATOR_DOCS,
    NUM_OOMS,
    NUM_RETRIES,
    RESERVED,
    STATS_DOCS,
    api,
    conclusion,
    setup,
    size,
)
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
from questions.families.units import MIB

CAPS: Final = (256, 320, 384, 448, 512, 640, 768, 1024)  # MiB; fraction = cap / 16 GiB
SPACE = Space(
    (
        grid(
            "loop",
            cap=(64, 96, 128, 160, 192, 224, 256),
            s=(5, 6, 7, 9, 11, 13, 15, 17, 24, 25, 33),
            extra=(1, 2, 3, 5, 8, 12),
            ask=(NUM_OOMS, RESERVED),
        ),
        grid(
            "growing",
            cap=(256, 384, 512, 640, 768, 896, 1024),
            first=(8, 12, 16, 20, 24),  # x0 = cap * first / 128
            step=(1, 2, 3),  # each next tensor is cap * step / 128 larger
            n=(6, 8, 10, 12, 14),
            ask=(NUM_RETRIES, RESERVED),
        ),
    )
)
CAP_DOCS: Final = (
    "https://pytorch.org/docs/stable/generated/torch.cuda.set_per_process_memory_fraction.html"
)
LOOP_PROMPT = Text(
    "{settings}; on an empty GPU, {n} uint8 tensors of {s} are allocated and all kept, each "
    "OOM caught and the loop going on. What does {api} report then?",
    "{settings}· σε άδεια GPU δεσμεύονται {n} τανυστές uint8 των {s} και κρατιούνται όλοι· "
    "κάθε OOM πιάνεται και ο βρόχος συνεχίζει. Τι αναφέρει μετά το {api};",
)
GROWING_PROMPT = Text(
    "{settings}; on an empty GPU, x0 = {s0} (uint8), then x1 to x{last}, each {step} larger "
    "than the one before and each followed by del of the previous one. What does {api} "
    "report then?",
    "{settings}· σε άδεια GPU x0 = {s0} (uint8), μετά x1 έως x{last}, καθένας {step} "
    "μεγαλύτερος από τον προηγούμενο, με del του προηγούμενου μετά από καθέναν. Τι αναφέρει "
    "μετά το {api};",
)
CAP_IGNORED = Candidate(
    "cap-ignored",
    0,
    Text(
        "that ignores the cap; the allocator may not reserve beyond it.",
        "αγνοεί το όριο· ο allocator δεν δεσμεύει πέρα από αυτό.",
    ),
)


def _inputs(ops: list[Op], ask: str, cap: int) -> dict[str, Any]:
    return trace_inputs(ops, ask, memory_fraction=cap / TOTAL_MEMORY)


def _per_segment(run: TraceRun) -> int:
    fit = sum(1 for r in run.results if not r.oom)
    return -(-fit // max(1, run.stats["segment.all.current"]))


def _loop_steps(run: TraceRun, n: int, tensor: int, cap: int, ask: str) -> list[Text]:
    fit = sum(1 for r in run.results if not r.oom)
    segments = run.stats["segment.all.current"]
    answer = run.value(ask)
    return [
        Text(
            "Each {s} tensor sits in a {g} segment, {p} per segment. The {c} cap allows {k} "
            "segments, so {f} of the {n} requests succeed and {o} fail.",
            "Κάθε τανυστής των {s} μπαίνει σε τμήμα {g}, {p} ανά τμήμα. Το όριο {c} επιτρέπει "
            "{k} τμήματα, άρα {f} από τα {n} αιτήματα πετυχαίνουν και {o} αποτυγχάνουν.",
        ).fill(
            s=size(tensor),
            g=size(run.results[0].grown),
            p=str(_per_segment(run)),
            c=size(cap),
            k=str(segments),
            f=str(fit),
            n=str(n),
            o=str(n - fit),
        ),
        conclusion(ask, str(answer) if ask == NUM_OOMS else size(answer)),
    ]


def _loop_candidates(run: TraceRun, n: int, tensor: int, cap: int, ask: str) -> list[Candidate]:
    if ask == RESERVED:
        return [
            allocated_not_reserved(run.stats["allocated_bytes.all.current"]),
            Candidate(
                "reserved-fills-the-cap",
                cap,
                Text(
                    "that assumes reserved memory grows to the cap; only whole segments fit.",
                    "υποθέτει ότι η δεσμευμένη (reserved) μνήμη φτάνει το όριο· χωρούν μόνο "
                    "ολόκληρα τμήματα.",
                ),
            ),
            Candidate(
                "failed-requests-reserve",
                -(-n // _per_segment(run)) * run.results[0].grown,
                Text(
                    "that counts segments for the failed requests too; an OOM reserves nothing.",
                    "μετρά τμήματα και για τα αιτήματα που απέτυχαν· ένα OOM δεν δεσμεύει τίποτα.",
                ),
            ),
            Candidate(
                "requested-bytes-of-all",
                n * tensor,
                Text(
                    "that is every request's bytes, failed ones included.",
                    "είναι τα bytes όλων των αιτημάτων, και των αποτυχημένων.",
                ),
            ),
        ]
    medium = tensor < 10 * MIB
    per_segment = 1 if medium else max(1, 20 * MIB // run.results[0].grown)
    return [
        Candidate(
            "cap-counts-allocated-only",
            max(0, n - cap // tensor),
            Text(
                "that fits the tensors' own bytes under the cap; whole segments count.",
                "χωρά στο όριο μόνο τα bytes των τανυστών· μετρούν ολόκληρα τα τμήματα.",
            ),
        ),
        Candidate(
            "one-segment-per-tensor" if medium else "segments-of-20-mib",
            max(0, n - cap // (20 * MIB) * per_segment),
            Text(
                "that gives each tensor its own 20 MiB segment; small ones share it.",
                "δίνει σε κάθε τανυστή δικό του τμήμα 20 MiB· οι μικροί το μοιράζονται.",
            )
            if medium
            else Text(
                "that assumes 20 MiB segments; from 10 MiB on, a segment is the request "
                "rounded to 2 MiB.",
                "υποθέτει τμήματα των 20 MiB· από 10 MiB και πάνω το τμήμα είναι το αίτημα "
                "στρογγυλεμένο στα 2 MiB.",
            ),
        ),
        Candidate(
            "first-oom-stops-the-loop",
            1,
            Text(
                "that stops at the first OOM; the loop catches it and goes on.",
                "σταματά στο πρώτο OOM· ο βρόχος το πιάνει και συνεχίζει.",
            ),
        ),
        CAP_IGNORED,
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


def _build_loop(params: dict[str, Any]) -> Draft:
    cap, tensor, ask = int(params["cap"]) * MIB, int(params["s"]) * MIB, str(params["ask"])
    n = _loop_fit(tensor, cap) + int(params["extra"])
    inputs = _inputs([malloc(f"t{i}", tensor) for i in range(n)], ask, cap)
    run = run_trace(inputs)
    prompt = LOOP_PROMPT.fill(settings=setup("", cap=cap), n=str(n), s=size(tensor), api=api(ask))
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
    first, step, n = int(params["first"]), int(params["step"]), int(params["n"])
    return [(first + i * step) * unit for i in range(n)]


def _growing_ops(sizes: list[int]) -> list[Op]:
    ops = [malloc("x0", sizes[0])]
    for i, nbytes in enumerate(sizes[1:], start=1):
        ops += [malloc(f"x{i}", nbytes), free(f"x{i - 1}")]
    return ops


def _growing_steps(run: TraceRun, cap: int, ask: str) -> list[Text]:
    retries = run.stats[NUM_RETRIES]
    released = sum(r.released for r in run.results)
    return [
        Text(
            "Each freed tensor's segment stays cached but is too small for the next one. "
            "When live, cached and new segments would pass the {c} cap, the allocator frees "
            "the cached ones and retries: {k} times here, releasing {r}.",
            "Το τμήμα κάθε αποδεσμευμένου τανυστή μένει στην cache αλλά δεν χωρά τον επόμενο. "
            "Όταν ζωντανά, αποθηκευμένα και νέα τμήματα θα ξεπερνούσαν το όριο {c}, ο "
            "allocator αποδεσμεύει τα αποθηκευμένα και ξαναδοκιμάζει: {k} φορές εδώ, "
            "αποδεσμεύοντας {r}.",
        ).fill(c=size(cap), k=str(retries), r=size(released)),
        conclusion(ask, str(retries) if ask == NUM_RETRIES else size(run.stats[RESERVED])),
    ]


def _growing_candidates(
    ask: str, inputs: dict[str, Any], run: TraceRun, cap: int
) -> list[Candidate]:
    retries = run.stats[NUM_RETRIES]
    steps = sum(1 for op in inputs["ops"] if op[0] == "malloc") - 1
    if ask == RESERVED:
        released = sum(r.released for r in run.results)
        return [
            Candidate(
                "retry-keeps-the-cache",
                run.stats[RESERVED] + released,
                Text(
                    "that keeps every freed segment; the retries released {r}.",
                    "κρατά κάθε αποδεσμευμένο τμήμα· οι επαναλήψεις αποδέσμευσαν {r}.",
                ).fill(r=size(released)),
            ),
            freed_memory_returns(inputs),
            allocated_not_reserved(run.stats["allocated_bytes.all.current"]),
            Candidate(
                "reserved-fills-the-cap",
                cap,
                Text(
                    "that assumes reserved memory grows to the cap.",
                    "υποθέτει ότι η δεσμευμένη (reserved) μνήμη φτάνει το όριο.",
                ),
            ),
            Candidate(
                "peak-not-current",
                run.stats["reserved_bytes.all.peak"],
                Text(
                    "that is the peak, not the current value.",
                    "είναι η κορυφή, όχι η τρέχουσα τιμή.",
                ),
            ),
        ]
    return [
        Candidate(
            "only-failed-retries-counted",
            run.stats[NUM_OOMS],
            Text(
                "that counts only failed retries (OOMs); a successful one counts too.",
                "μετρά μόνο τις αποτυχημένες επαναλήψεις (OOM)· μετρά και η επιτυχημένη.",
            ),
        ),
        Candidate(
            "retry-at-every-step",
            steps,
            Text(
                "that expects a retry at every step; one comes only when the cap is reached.",
                "περιμένει επανάληψη σε κάθε βήμα· γίνεται μόνο όταν φτάνει το όριο.",
            ),
        ),
        Candidate(
            "both-release-steps-counted",
            2 * retries,
            Text(
                "that counts two retries per request; only the final release-and-retry counts.",
                "μετρά δύο επαναλήψεις ανά αίτημα· μετρά μόνο η τελική αποδέσμευση και επανάληψη.",
            ),
        ),
        freed_memory_returns(inputs),
        Candidate(
            "cache-released-once",
            1,
            Text(
                "that releases the cache once for good; it fills up again.",
                "αποδεσμεύει την cache μία φορά για πάντα· ξαναγεμίζει.",
            ),
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
    prompt: Text,
    steps: list[Text],
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
        style=Style.EXACT_SIZE if inputs["ask"] == RESERVED else Style.COUNT,
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
        "Requests under a memory-fraction cap: how many fail (num_ooms), how often the cache "
        "is released and retried (num_alloc_retries), what stays reserved"
    ),
    space=SPACE,
    build=build,
)
