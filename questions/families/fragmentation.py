"""Family `fragmentation-fit`: holes in a cached segment, then one more request.

One big tensor is freed (its segment stays cached), `k` equal tensors are carved from it,
every other one is freed: `k/2` holes that cannot merge. Does the next request fit a hole,
or does it need a new segment although the free bytes add up to enough (spec 3, Q1/Q3)?
"""

from __future__ import annotations

from typing import Any

from questions.families.misconceptions import (
    allocated_not_reserved,
    every_request_summed,
    freed_memory_returns,
    no_reuse,
)
from questions.families.model import Candidate, Draft, Family, Style, Text
from questions.families.narrate import (
    ALLOCATED,
    ALLOCATOR_DOCS,
    INACTIVE_SPLIT,
    RESERVED,
    STATS_DOCS,
    api,
    conclusion,
    size,
)
from questions.families.space import Space, grid
from questions.families.trace import (
    TRACE_DEMO,
    Op,
    free,
    malloc,
    replay_value,
    run_trace,
    trace_inputs,
)
from questions.families.units import MIB

SPACE = Space(
    (
        grid(
            "holes",
            b=(12, 16, 20, 24, 25, 30, 32, 40, 48, 50, 60, 64),
            k=(4, 6, 8, 10, 12, 14, 16),
            j=(0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8),
            ask=(RESERVED, INACTIVE_SPLIT),
        ),
    )
)

PROMPT = Text(
    "Default allocator settings, empty GPU, uint8 tensors: big = {S}; del big; then {k} "
    "tensors of {b} (t0 to t{last}); del every even-numbered one (t0, t2, ...); then x = {r}. "
    "What does {api} report then?",
    "Προεπιλεγμένες ρυθμίσεις allocator, άδεια GPU, τανυστές uint8: big = {S}· del big· μετά "
    "{k} τανυστές των {b} (t0 έως t{last})· del όσων έχουν ζυγό αριθμό (t0, t2, ...)· μετά "
    "x = {r}. Τι αναφέρει μετά το {api};",
)


def _ops(segment: int, b: int, k: int, r: int) -> list[Op]:
    ops = [malloc("big", segment), free("big")]
    ops += [malloc(f"t{i}", b) for i in range(k)]
    ops += [free(f"t{i}") for i in range(0, k, 2)]
    ops.append(malloc("x", r))
    return ops


def _steps(segment: int, b: int, k: int, r: int, grown: int, answer: int, ask: str) -> list[Text]:
    holes = k // 2
    steps = [
        Text(
            "del big leaves one cached {S} segment; the {k} tensors are carved from it by "
            "splitting.",
            "Το del big αφήνει στην cache ένα τμήμα {S}· οι {k} τανυστές κόβονται από αυτό με "
            "διάσπαση.",
        ).fill(S=size(segment), k=str(k)),
        Text(
            "Freeing every other one leaves {h} holes of {b} ({f} free) with live blocks "
            "between them, so they cannot merge.",
            "Η αποδέσμευση κάθε δεύτερου αφήνει {h} κενά των {b} ({f} ελεύθερα) με ζωντανά "
            "μπλοκ ανάμεσα, άρα δεν συγχωνεύονται.",
        ).fill(h=str(holes), b=size(b), f=size(holes * b)),
    ]
    if grown:
        steps.append(
            Text(
                "x ({r}) is larger than every hole, so it needs a new {g} segment.",
                "Το x ({r}) είναι μεγαλύτερο από κάθε κενό, άρα χρειάζεται νέο τμήμα {g}.",
            ).fill(r=size(r), g=size(grown))
        )
    else:
        steps.append(
            Text(
                "x ({r}) fits one hole: no new segment.",
                "Το x ({r}) χωρά σε ένα κενό: κανένα νέο τμήμα.",
            ).fill(r=size(r))
        )
    steps.append(conclusion(ask, size(answer)))
    return steps


def _candidates(ask: str, inputs: dict[str, Any], stats: dict[str, int]) -> list[Candidate]:
    ops = inputs["ops"]
    if ask == RESERVED:
        return [
            Candidate(
                "free-bytes-add-up",
                replay_value(inputs, ops=ops[:-1]),
                Text(
                    "that adds the holes up; x needs one contiguous free block.",
                    "προσθέτει τα κενά· το x χρειάζεται ένα συνεχές ελεύθερο μπλοκ.",
                ),
            ),
            freed_memory_returns(inputs),
            allocated_not_reserved(stats[ALLOCATED]),
            no_reuse(inputs),
            every_request_summed(stats),
        ]
    return [
        Candidate(
            "request-ignored",
            replay_value(inputs, ops=ops[:-1]),
            Text(
                "that is the figure before x was allocated.",
                "είναι η τιμή πριν από τη δέσμευση του x.",
            ),
        ),
        Candidate(
            "holes-are-releasable",
            0,
            Text(
                "that treats the holes as releasable; free blocks of a used segment are not.",
                "θεωρεί τα κενά αποδεσμεύσιμα· τα ελεύθερα μπλοκ ενός τμήματος σε χρήση δεν είναι.",
            ),
        ),
        Candidate(
            "reserved-minus-nothing",
            stats[RESERVED],
            Text(
                "that is all reserved memory, live blocks included.",
                "είναι όλη η δεσμευμένη (reserved) μνήμη, μαζί με τα ζωντανά μπλοκ.",
            ),
        ),
        Candidate(
            "allocated-not-free",
            stats[ALLOCATED],
            Text(
                "that is memory_allocated(), the live blocks, not the free ones.",
                "είναι το memory_allocated(), τα ζωντανά μπλοκ, όχι τα ελεύθερα.",
            ),
        ),
    ]


def build(variant: str, params: dict[str, Any]) -> Draft:
    b, k, ask = int(params["b"]) * MIB, int(params["k"]), str(params["ask"])
    r = int(float(params["j"]) * b)
    segment = b * k
    inputs = trace_inputs(_ops(segment, b, k, r), ask)
    run = run_trace(inputs)
    answer = run.value(ask)
    prompt = PROMPT.fill(
        S=size(segment), k=str(k), b=size(b), last=str(k - 1), r=size(r), api=api(ask)
    )
    return Draft(
        topic="fragmentation",
        difficulty=3,
        inputs=inputs,
        prompt=prompt,
        steps=tuple(_steps(segment, b, k, r, run.results[-1].grown, answer, ask)),
        answer=answer,
        style=Style.EXACT_SIZE,
        candidates=tuple(_candidates(ask, inputs, run.stats)),
        references=(ALLOCATOR_DOCS, STATS_DOCS),
        demo=TRACE_DEMO,
    )


FAMILY = Family(
    id="fragmentation-fit",
    topic="fragmentation",
    kind="allocator-trace",
    difficulty=(3, 3),
    description=(
        "Holes carved in a cached segment, then one more request: does it fit a hole or need "
        "a new segment (memory_reserved, or the non-releasable inactive_split_bytes)"
    ),
    space=SPACE,
    build=build,
)
