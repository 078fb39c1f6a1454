"""Family `roundup-power2`: one tensor under ``roundup_power2_divisions:D``.

Each power-of-two interval is cut into D equal steps and a request is rounded up to the
next step, unless it is at most 512 * D bytes (then plain 512-byte rounding applies) or
a power of two itself (spec 1.2). The block then sits in a segment by the usual rules.
"""

from __future__ import annotations

from typing import Any

from gpu_runner.sim import allocation_size, round_size
from questions.families.misconceptions import reserved_not_allocated
from questions.families.model import Candidate, Draft, Family, Style, Text
from questions.families.narrate import (
    ALLOCATED,
    ALLOCATOR_SOURCE,
    CONF_DOCS,
    RESERVED,
    conclusion,
    setup,
    size,
    trace_prompt,
)
from questions.families.space import Space, grid
from questions.families.trace import TRACE_DEMO, malloc, replay_value, run_trace, trace_inputs
from questions.families.units import KIB, MIB

DIVISIONS = (2, 4, 8, 16)
ASKS = (ALLOCATED, RESERVED)
SPACE = Space(
    (
        grid("small", k=range(1, 1048), d=DIVISIONS, ask=(ALLOCATED,)),
        grid("large", m=range(1, 1000), j=(1, 3, 7), d=DIVISIONS, ask=ASKS),
    )
)
PLAIN = (0,) * 16


def _request(variant: str, params: dict[str, Any]) -> int:
    if variant == "small":
        return int(params["k"]) * 1000 + 1
    return int(params["m"]) * MIB + int(params["j"]) * 100 * KIB


def _bounds(n: int) -> tuple[int, int]:
    low = 1 << (n.bit_length() - 1)
    return low, low * 2


def _rounding_step(n: int, d: int, block: int) -> Text:
    if n <= 512 * d:
        return Text(
            "{n} is at most 512 × {d} bytes, so plain 512-byte rounding applies: {b}.",
            "Τα {n} είναι έως 512 × {d} bytes, άρα ισχύει η απλή στρογγύλευση στα 512 B: {b}.",
        ).fill(n=size(n), d=str(d), b=size(block))
    low, high = _bounds(n)
    return Text(
        "roundup_power2_divisions:{d} cuts [{lo}, {hi}) into {d} steps of {st}; {n} rounds "
        "up to {b}.",
        "Το roundup_power2_divisions:{d} χωρίζει το [{lo}, {hi}) σε {d} βήματα των {st}· τα "
        "{n} στρογγυλεύονται σε {b}.",
    ).fill(d=str(d), lo=size(low), hi=size(high), st=size(low // d), n=size(n), b=size(block))


def _segment_step(block: int, segment: int, allocated: int) -> Text:
    if allocated == block:
        return Text(
            "The block comes from a new {s} segment.", "Το μπλοκ προέρχεται από νέο τμήμα {s}."
        ).fill(s=size(segment))
    return Text(
        "It gets a {s} segment; at most 1 MiB is left, so the whole segment is the block.",
        "Παίρνει τμήμα {s}· περισσεύει έως 1 MiB, άρα όλο το τμήμα είναι το μπλοκ.",
    ).fill(s=size(segment))


def _candidates(
    ask: str, n: int, d: int, inputs: dict[str, Any], stats: dict[str, int]
) -> list[Candidate]:
    low, high = _bounds(n)
    upper_steps = -(-n // (high // d)) * (high // d)
    plain = Candidate(
        "plain-512-rounding",
        replay_value(inputs, conf=""),
        Text(
            "that is plain 512-byte rounding, as without the option.",
            "είναι η απλή στρογγύλευση στα 512 B, όπως χωρίς την επιλογή.",
        ),
    )
    blocks = [
        (
            "next-power-of-two",
            high if n != low else n,
            Text(
                "that rounds to the next power of two; {d} divisions give finer steps.",
                "στρογγυλεύει στην επόμενη δύναμη του 2· οι {d} διαιρέσεις δίνουν μικρότερα "
                "βήματα.",
            ).fill(d=str(d)),
        ),
        (
            "steps-of-the-upper-power",
            upper_steps,
            Text(
                "that takes steps of the upper power of two; they divide the lower one.",
                "παίρνει βήματα από την πάνω δύναμη του 2· διαιρούν την κάτω.",
            ),
        ),
        (
            "divisions-below-the-threshold",
            round_size(n, (d,) * 16) if n > 512 * d else _next_division(n, d),
            Text(
                "that applies the divisions below 512 × {d} bytes, where plain rounding rules.",
                "εφαρμόζει τις διαιρέσεις κάτω από 512 × {d} bytes, όπου ισχύει η απλή "
                "στρογγύλευση.",
            ).fill(d=str(d)),
        ),
    ]
    step = max(1, low // d)
    blocks.append(
        (
            "rounds-to-nearest-step",
            max(512, (n + step // 2) // step * step),
            Text(
                "that rounds to the nearest step; the allocator always rounds up.",
                "στρογγυλεύει στο πλησιέστερο βήμα· ο allocator στρογγυλεύει πάντα προς τα πάνω.",
            ),
        )
    )
    candidates = [plain] + [
        Candidate(name, value if ask == ALLOCATED else allocation_size(value), why)
        for name, value, why in blocks
    ]
    candidates.append(
        Candidate(
            "requested-not-block",
            n,
            Text(
                "that is the request itself; the allocator rounds it up.",
                "είναι το ίδιο το αίτημα· ο allocator το στρογγυλεύει προς τα πάνω.",
            ),
        )
    )
    if ask == ALLOCATED:
        candidates.append(reserved_not_allocated(stats[RESERVED]))
    else:
        candidates.append(
            Candidate(
                "block-not-segment",
                stats[ALLOCATED],
                Text(
                    "that is the block; the allocator reserves a whole segment around it.",
                    "είναι το μπλοκ· ο allocator δεσμεύει ολόκληρο τμήμα γύρω του.",
                ),
            )
        )
    return candidates


def _next_division(n: int, d: int) -> int:
    """The division rule applied regardless of the 512 * d threshold."""
    low, _ = _bounds(n)
    step = max(1, low // d)
    return -(-n // step) * step


def build(variant: str, params: dict[str, Any]) -> Draft:
    n, d, ask = _request(variant, params), int(params["d"]), str(params["ask"])
    conf = f"roundup_power2_divisions:{d}"
    inputs = trace_inputs([malloc("x", n)], ask, conf=conf)
    run = run_trace(inputs)
    first = run.results[0]
    block = round_size(n, (d,) * 16)
    answer = run.value(ask)
    steps = (
        _rounding_step(n, d, block),
        _segment_step(block, first.grown, first.block),
        conclusion(ask, size(answer)),
    )
    return Draft(
        topic="allocator-config",
        difficulty=2 if variant == "small" else 3,
        inputs=inputs,
        prompt=trace_prompt(setup(conf), Text(f"x = {size(n).en}", f"x = {size(n).el}"), ask),
        steps=steps,
        answer=answer,
        style=Style.EXACT_SIZE,
        candidates=tuple(_candidates(ask, n, d, inputs, run.stats)),
        references=(CONF_DOCS, ALLOCATOR_SOURCE),
        demo=TRACE_DEMO,
    )


FAMILY = Family(
    id="roundup-power2",
    topic="allocator-config",
    kind="allocator-trace",
    difficulty=(2, 3),
    description=(
        "roundup_power2_divisions:D: the block (memory_allocated) or segment "
        "(memory_reserved) of one request, with the 512 × D threshold"
    ),
    space=SPACE,
    build=build,
)
