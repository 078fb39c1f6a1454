"""Family `expandable-segments`: the same workload, native or with expandable segments.

`n` tensors of `a` are allocated and all freed, then `m` larger tensors of `c`. Native
segments never grow or merge, so the larger tensors need new segments beside the cached
ones; with ``expandable_segments:True`` one range per pool grows in 20 MiB pages and the
freed pages are reused; such ranges are not counted in ``segment.*`` (spec 1.12, S11).
"""

from __future__ import annotations

from typing import Any

from questions.families.misconceptions import (
    allocated_not_reserved,
    every_request_summed,
    freed_memory_returns,
    no_reuse,
    requested_live_bytes,
)
from questions.families.model import Candidate, Draft, Family, Style, Text
from questions.families.narrate import (
    ALLOCATOR_SOURCE,
    CONF_DOCS,
    RESERVED,
    SEGMENTS,
    api,
    conclusion,
    setup,
    size,
)
from questions.families.space import Space, grid
from questions.families.trace import TRACE_DEMO, free, malloc, replay_value, run_trace, trace_inputs
from questions.families.units import MIB

EXPANDABLE = "expandable_segments:True"
SPACE = Space(
    (
        grid(
            "grow",
            conf=("", EXPANDABLE),
            a=(4, 6, 8, 12, 16, 24),
            n=(2, 3, 4, 6, 8),
            mult=(1.5, 2, 2.5, 3, 4),
            m=(2, 3, 4, 5),
            ask=(RESERVED, SEGMENTS),
        ),
    )
)
PROMPT = Text(
    "{settings}; uint8 tensors on an empty GPU: {n} tensors of {a}, all deleted, then {m} "
    "tensors of {c} (kept). What does {api} report then?",
    "{settings}· τανυστές uint8 σε άδεια GPU: {n} τανυστές των {a}, όλοι διαγραμμένοι, μετά "
    "{m} τανυστές των {c} (κρατιούνται). Τι αναφέρει μετά το {api};",
)


def _value(ask: str, value: int) -> Text | str:
    return str(value) if ask == SEGMENTS else size(value)


def _steps(
    conf: str, n: int, a: int, m: int, c: int, first: int, final: int, ask: str, answer: int
) -> list[Text]:
    more = final - first
    if conf:
        steps = [
            Text(
                "Expandable segments keep one growing range per pool, mapped in 20 MiB pages: "
                "the {n} tensors of {a} map {R}.",
                "Τα expandable segments κρατούν ένα αυξανόμενο εύρος ανά pool, με σελίδες των "
                "20 MiB: οι {n} τανυστές των {a} χαρτογραφούν {R}.",
            ).fill(n=str(n), a=size(a), R=size(first)),
        ]
    else:
        steps = [
            Text(
                "Native segments: the {n} tensors of {a} reserve {R}.",
                "Native τμήματα: οι {n} τανυστές των {a} δεσμεύουν {R}.",
            ).fill(n=str(n), a=size(a), R=size(first)),
        ]
    steps.append(
        Text(
            "del keeps all of it cached; the {m} tensors of {c} then {grow}, {F} in all.",
            "Το del τα κρατά όλα στην cache· οι {m} τανυστές των {c} μετά {grow}, {F} συνολικά.",
        ).fill(
            m=str(m),
            c=size(c),
            F=size(final),
            grow=Text("add {x}", "προσθέτουν {x}").fill(x=size(more))
            if more
            else Text("fit the cached memory", "χωρούν στη μνήμη της cache"),
        )
    )
    if ask == SEGMENTS and conf:
        steps.append(
            Text(
                "segment.* leaves expandable ranges out, so the count stays 0.",
                "Το segment.* δεν μετρά τα expandable εύρη, άρα ο αριθμός μένει 0.",
            )
        )
    steps.append(conclusion(ask, _value(ask, answer)))
    return steps


def _candidates(ask: str, inputs: dict[str, Any], stats: dict[str, int]) -> list[Candidate]:
    other = "" if inputs["conf"] else EXPANDABLE
    other_mode = Candidate(
        "native-and-expandable-confused",
        replay_value(inputs, conf=other),
        Text(
            "that is the figure with expandable segments {state}.",
            "είναι η τιμή με τα expandable segments {state}.",
        ).fill(state=Text("off", "απενεργοποιημένα") if other == "" else Text("on", "ενεργά")),
    )
    if ask == RESERVED:
        return [
            other_mode,
            freed_memory_returns(inputs),
            allocated_not_reserved(stats["allocated_bytes.all.current"]),
            requested_live_bytes(stats["requested_bytes.all.current"]),
            every_request_summed(stats),
            no_reuse(inputs),
        ]
    tensors = sum(1 for op in inputs["ops"] if op[0] == "malloc")
    live = tensors - sum(1 for op in inputs["ops"] if op[0] == "free")
    return [
        other_mode,
        Candidate(
            "one-segment-per-tensor",
            tensors,
            Text(
                "that gives every tensor ever allocated its own segment.",
                "δίνει σε κάθε τανυστή που δεσμεύτηκε ποτέ δικό του τμήμα.",
            ),
        ),
        Candidate(
            "one-segment-per-live-tensor",
            live,
            Text(
                "that counts one segment per live tensor.",
                "μετρά ένα τμήμα ανά ζωντανό τανυστή.",
            ),
        ),
        freed_memory_returns(inputs),
        Candidate(
            "expandable-range-counted",
            1,
            Text(
                "that counts one growing segment; segment.* counts only cudaMalloc segments.",
                "μετρά ένα αυξανόμενο τμήμα· το segment.* μετρά μόνο τμήματα cudaMalloc.",
            ),
        ),
    ]


def build(variant: str, params: dict[str, Any]) -> Draft:
    conf, ask = str(params["conf"]), str(params["ask"])
    a, n, m = int(params["a"]) * MIB, int(params["n"]), int(params["m"])
    c = int(a * float(params["mult"]))
    ops = [malloc(f"t{i}", a) for i in range(n)]
    ops += [free(f"t{i}") for i in range(n)]
    ops += [malloc(f"u{i}", c) for i in range(m)]
    inputs = trace_inputs(ops, ask, conf=conf)
    run = run_trace(inputs)
    answer = run.value(ask)
    first = run.results[n - 1].reserved
    prompt = PROMPT.fill(
        settings=setup(conf), n=str(n), a=size(a), m=str(m), c=size(c), api=api(ask)
    )
    return Draft(
        topic="allocator-config",
        difficulty=3,
        inputs=inputs,
        prompt=prompt,
        steps=tuple(_steps(conf, n, a, m, c, first, run.stats[RESERVED], ask, answer)),
        answer=answer,
        style=Style.COUNT if ask == SEGMENTS else Style.EXACT_SIZE,
        candidates=tuple(_candidates(ask, inputs, run.stats)),
        references=(CONF_DOCS, ALLOCATOR_SOURCE),
        demo=TRACE_DEMO,
    )


FAMILY = Family(
    id="expandable-segments",
    topic="allocator-config",
    kind="allocator-trace",
    difficulty=(3, 3),
    description=(
        "Native vs expandable_segments:True: tensors freed, then larger ones; reserved "
        "memory or the segment count"
    ),
    space=SPACE,
    build=build,
)
