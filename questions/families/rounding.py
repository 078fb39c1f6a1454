"""Family `request-rounding`: one tensor in a fresh process; its block or its segment.

Teaches the 512-byte rounding, the small/large pool boundary (1 MiB), the 2 MiB and 20 MiB
segments, 2 MiB rounding from 10 MiB on, and that a large-pool remainder of at most 1 MiB
stays attached to the block (spec 1.2-1.6).
"""

from __future__ import annotations

from typing import Any

from questions.families.model import Candidate, Draft, Family, Style, Text
from questions.families.narrate import (
    ALLOCATED,
    ALLOCATOR_DOCS,
    ALLOCATOR_SOURCE,
    RESERVED,
    conclusion,
    setup,
    size,
    trace_prompt,
)
from questions.families.space import Space, grid
from questions.families.trace import TRACE_DEMO, malloc, run_trace, trace_inputs
from questions.families.units import KIB, MIB

ASKS = (ALLOCATED, RESERVED)
SPACE = Space(
    (
        grid("tiny", n=range(1, 512), ask=ASKS),
        grid("small", k=range(1, 2048), r=(1, 257), ask=ASKS),
        grid("medium", m=range(17, 160), r=(0, 1, 1000, 40000), ask=ASKS),
        grid("large", m=range(40, 1200), r=(0, 1, 4095, 100000), ask=ASKS),
    )
)


def _request(variant: str, p: dict[str, Any]) -> int:
    if variant == "tiny":
        return int(p["n"])
    if variant == "small":
        return int(p["k"]) * 512 + int(p["r"])
    step = 64 * KIB if variant == "medium" else 256 * KIB
    return int(p["m"]) * step + int(p["r"])


def _rounding_step(n: int, block: int) -> Text:
    if n < 512:
        return Text(
            "Below 512 B, so the block is 512 bytes.", "Κάτω από 512 B: το μπλοκ είναι 512 bytes."
        )
    if n == block:
        return Text(
            "{n} is already a multiple of 512 B.", "Τα {n} είναι ήδη πολλαπλάσιο των 512 B."
        ).fill(n=size(n))
    return Text(
        "A request of {n} rounds up to a {b} block (a multiple of 512 B).",
        "Ένα αίτημα {n} στρογγυλεύεται προς τα πάνω σε μπλοκ {b} (πολλαπλάσιο των 512 B).",
    ).fill(n=size(n), b=size(block))


def _segment_step(block: int, segment: int) -> Text:
    if block <= MIB:
        return Text(
            "At most 1 MiB: small pool, whose segments are 2 MiB.",
            "Έως 1 MiB: small pool (δεξαμενή μνήμης), με τμήματα (segments) των 2 MiB.",
        )
    if block < 10 * MIB:
        return Text(
            "Above 1 MiB and below 10 MiB: large pool, one 20 MiB segment.",
            "Πάνω από 1 MiB και κάτω από 10 MiB: large pool, ένα τμήμα 20 MiB.",
        )
    return Text(
        "10 MiB or more: large pool, a segment rounded up to 2 MiB: {s}.",
        "Από 10 MiB και πάνω: large pool, τμήμα στρογγυλεμένο σε πολλαπλάσιο των 2 MiB: {s}.",
    ).fill(s=size(segment))


def _split_step(block: int, segment: int, split: bool) -> Text:
    rest = segment - block
    if block <= MIB:
        return Text(
            "The block is cut from it; the rest stays cached.",
            "Το μπλοκ κόβεται από αυτό· το υπόλοιπο μένει στην cache.",
        )
    if split:
        return Text(
            "{r} is left, more than 1 MiB, so it is split off and stays cached.",
            "Περισσεύουν {r}, πάνω από 1 MiB, άρα διασπώνται και μένουν στην cache.",
        ).fill(r=size(rest))
    if rest == 0:
        return Text("The block fills the segment exactly.", "Το μπλοκ γεμίζει ακριβώς το τμήμα.")
    return Text(
        "Only {r} would be left, not more than 1 MiB, so the whole segment is the block.",
        "Θα περίσσευαν μόνο {r}, όχι πάνω από 1 MiB, άρα όλο το τμήμα είναι το μπλοκ.",
    ).fill(r=size(rest))


REQUESTED = Text(
    "that is the request itself; blocks are rounded up to a multiple of 512 B.",
    "είναι το ίδιο το αίτημα· τα μπλοκ στρογγυλεύονται σε πολλαπλάσιο των 512 B.",
)
POWER_OF_TWO = Text(
    "that is power-of-two rounding, which only roundup_power2_divisions turns on.",
    "είναι στρογγύλευση σε δύναμη του 2, που την ενεργοποιεί μόνο το roundup_power2_divisions.",
)


def _next_power_of_two(n: int) -> int:
    return 1 << (n - 1).bit_length()


def _allocated_candidates(n: int, rounded: int, segment: int) -> list[Candidate]:
    return [
        Candidate("requested-not-block", n, REQUESTED),
        Candidate(
            "block-is-whole-segment",
            segment,
            Text(
                "that is the segment (memory_reserved()); the rest of it is a free block.",
                "είναι το τμήμα (memory_reserved())· το υπόλοιπό του είναι ελεύθερο μπλοκ.",
            ),
        ),
        Candidate(
            "large-remainder-always-split",
            rounded,
            Text(
                "that assumes the rest is split off; the large pool splits only above 1 MiB.",
                "υποθέτει ότι το υπόλοιπο διασπάται· το large pool διασπά μόνο πάνω από 1 MiB.",
            ),
        ),
        Candidate("power-of-two-rounding", _next_power_of_two(n), POWER_OF_TWO),
        Candidate(
            "block-rounded-to-2mib",
            -(-n // (2 * MIB)) * 2 * MIB,
            Text(
                "that rounds the block to 2 MiB, a rule for segments, not blocks.",
                "στρογγυλεύει το μπλοκ στα 2 MiB, κανόνας για τμήματα, όχι για μπλοκ.",
            ),
        ),
    ]


def _reserved_candidates(n: int, rounded: int) -> list[Candidate]:
    out = [
        Candidate(
            "requested-not-segment",
            n,
            Text(
                "that assumes the driver is asked for exactly the request.",
                "υποθέτει ότι ο driver δίνει ακριβώς όσα ζητήθηκαν.",
            ),
        ),
        Candidate(
            "block-not-segment",
            rounded,
            Text(
                "that is the block; the allocator reserves a whole segment around it.",
                "είναι το μπλοκ· ο allocator δεσμεύει ολόκληρο τμήμα γύρω του.",
            ),
        ),
    ]
    if rounded <= MIB:
        wrong, why = (
            20 * MIB,
            Text(
                "that is a large-pool segment; up to 1 MiB the segment is 2 MiB.",
                "είναι τμήμα του large pool· έως 1 MiB το τμήμα είναι 2 MiB.",
            ),
        )
    elif rounded < 10 * MIB:
        wrong, why = (
            -(-rounded // (2 * MIB)) * 2 * MIB,
            Text(
                "that rounds to 2 MiB; between 1 and 10 MiB the segment is 20 MiB.",
                "στρογγυλεύει στα 2 MiB· από 1 έως 10 MiB το τμήμα είναι 20 MiB.",
            ),
        )
    else:
        wrong, why = (
            -(-rounded // (20 * MIB)) * 20 * MIB,
            Text(
                "that rounds to 20 MiB; from 10 MiB on, segments are rounded to 2 MiB.",
                "στρογγυλεύει στα 20 MiB· από 10 MiB και πάνω τα τμήματα στρογγυλεύονται "
                "στα 2 MiB.",
            ),
        )
    out.append(Candidate("wrong-segment-size", wrong, why))
    out.append(Candidate("power-of-two-rounding", _next_power_of_two(n), POWER_OF_TWO))
    return out


def build(variant: str, params: dict[str, Any]) -> Draft:
    n = _request(variant, params)
    ask = str(params["ask"])
    inputs = trace_inputs([malloc("x", n)], ask)
    run = run_trace(inputs)
    first = run.results[0]
    rounded = max(512, -(-n // 512) * 512)
    segment = first.grown
    answer = run.value(ask)
    candidates = (
        _allocated_candidates(n, rounded, segment)
        if ask == ALLOCATED
        else _reserved_candidates(n, rounded)
    )
    steps = (
        _rounding_step(n, rounded),
        _segment_step(rounded, segment),
        _split_step(first.block, segment, first.split),
        conclusion(ask, size(answer)),
    )
    return Draft(
        topic="caching-allocator",
        difficulty=1 if rounded <= MIB else 2,
        inputs=inputs,
        prompt=trace_prompt(setup(""), Text(f"x = {size(n).en}", f"x = {size(n).el}"), ask),
        steps=steps,
        answer=answer,
        style=Style.EXACT_SIZE,
        candidates=tuple(candidates),
        references=(ALLOCATOR_DOCS, ALLOCATOR_SOURCE),
        demo=TRACE_DEMO,
    )


FAMILY = Family(
    id="request-rounding",
    topic="caching-allocator",
    kind="allocator-trace",
    difficulty=(1, 2),
    description=(
        "One tensor in a fresh process: its block (memory_allocated) or its segment "
        "(memory_reserved): 512 B rounding, small/large pool, 2/20 MiB segments, splitting"
    ),
    space=SPACE,
    build=build,
)
