"""Family `roundup-power2`: one tensor under ``roundup_power2_divisions:D``.

Each power-of-two interval is cut into D equal steps and a request is rounded up to the
next step, unless it is at most 512 * D bytes (then plain 512-byte rounding applies) or
a power of two itself (spec 1.2). The block then sits in a segment by the usual rules.
Each wrong block size is a misconception about the rounding; asked for the segment, the
same misconception gives that block's segment.
"""

from __future__ import annotations

from typing import Any

from bot.i18n import Localized, Text
from gpu_runner.sim import allocation_size, round_size
from questions.families.misconceptions import (
    allocated_not_inactive,
    free_rest_not_counted,
    reserved_not_allocated,
    reserved_not_inactive,
)
from questions.families.model import Candidate, Draft, trace_family
from questions.families.narrate import (
    ALLOCATED,
    ALLOCATOR_SOURCE,
    CONF_DOCS,
    INACTIVE_SPLIT,
    RESERVED,
    STATS_DOCS,
    conclusion,
    ops_prompt,
    size,
)
from questions.families.sizes import MIB
from questions.families.space import Space, grid
from questions.families.trace import malloc, replay_ops, replay_value, trace_draft

DIVISIONS = (2, 4, 8, 16)
ASKS = (ALLOCATED, RESERVED)
SPLIT_ASKS = (ALLOCATED, INACTIVE_SPLIT)
# A request lies inside a power-of-two interval [2^e, 2^(e+1)), at a fraction of its width
# (near either end every rounding rule gives the same block), plus a few bytes.
FRACTIONS = (0.05, 0.15, 0.3, 0.4, 0.55, 0.65, 0.8, 0.9)
JITTER = (1, 77, 301)
SPACE = Space(
    (
        # below 16 MiB the segment is mostly a fixed 2 or 20 MiB: the block or the free
        # rest of its segment is asked (rounding up more leaves less rest)
        grid("small", e=range(13, 20), f=FRACTIONS, j=JITTER, d=DIVISIONS, ask=SPLIT_ASKS),
        grid("medium", e=range(20, 24), f=FRACTIONS, j=JITTER, d=DIVISIONS, ask=SPLIT_ASKS),
        grid("large", e=range(24, 31), f=FRACTIONS, j=JITTER, d=DIVISIONS, ask=ASKS),
    )
)


def _request(variant: str, params: dict[str, Any]) -> int:
    low = 1 << int(params["e"])
    return low + int(low * float(params["f"])) + int(params["j"])


def _bounds(n: int) -> tuple[int, int]:
    low = 1 << (n.bit_length() - 1)
    return low, low * 2


def _rounding_step(n: int, d: int, block: int) -> Localized:
    if n <= 512 * d:
        return Text(
            "{n} is at most 512 × {d} bytes, so plain 512-byte rounding applies: {b}.",
            n=size(n),
            d=d,
            b=size(block),
        )
    low, high = _bounds(n)
    return Text(
        "roundup_power2_divisions:{d} cuts [{lo}, {hi}) into {d} steps of {st}; {n} rounds "
        "up to {b}.",
        d=d,
        lo=size(low),
        hi=size(high),
        st=size(low // d),
        n=size(n),
        b=size(block),
    )


def _segment_step(block: int, segment: int, allocated: int) -> Localized:
    if allocated == block:
        return Text("The block comes from a new {s} segment.", s=size(segment))
    return Text(
        "It gets a segment of {s}; at most 1 MiB is left, so the whole segment is the block.",
        s=size(segment),
    )


def _next_division(n: int, d: int) -> int:
    """The division rule applied regardless of the 512 * d threshold."""
    low, _ = _bounds(n)
    step = max(1, low // d)
    return -(-n // step) * step


def _blocks(n: int, d: int) -> list[tuple[str, int, Localized, Localized]]:
    """Wrong block sizes: (misconception, block, why for the block, its short name)."""
    low, high = _bounds(n)
    step = max(1, low // d)
    plain = max(512, -(-n // 512) * 512)
    return [
        (
            "next-power-of-two",
            high if n != low else n,
            Text("the next power of two; {d} divisions give finer steps.", d=d),
            Text("power-of-two rounding"),
        ),
        (
            "steps-of-the-upper-power",
            -(-n // (high // d)) * (high // d),
            Text("steps of the upper power of two; they divide the lower one."),
            Text("steps of the upper power of two"),
        ),
        (
            "divisions-below-the-threshold",
            round_size(n, (d,) * 16) if n > 512 * d else _next_division(n, d),
            Text("divisions below 512 × {d} bytes, where plain rounding rules.", d=d),
            Text("divisions below the threshold"),
        ),
        (
            "rounds-to-nearest-step",
            max(512, (n + step // 2) // step * step),
            Text("the nearest step; the allocator rounds up."),
            Text("rounding to the nearest step"),
        ),
        (
            "rounds-down-to-a-step",
            max(512, n // step * step),
            Text("rounded down; the allocator rounds up."),
            Text("rounding down"),
        ),
        (
            "steps-of-512-times-d",
            -(-n // (512 * d)) * 512 * d,
            Text("steps of 512 × {d} bytes; steps split the power-of-two interval.", d=d),
            Text("steps of 512 × {d} bytes", d=d),
        ),
        (
            "option-ignored",
            plain,
            Text("plain 512-byte rounding, as without the option."),
            Text("plain 512-byte rounding"),
        ),
        (
            "block-rounded-to-2mib",
            -(-n // (2 * MIB)) * 2 * MIB,
            Text("2 MiB rounding, a rule for segments, not blocks."),
            Text("2 MiB rounding"),
        ),
        (
            "twice-the-divisions",
            round_size(n, (2 * d,) * 16) if d < 16 else _next_division(n, 32),
            Text("{two} steps per power of two; the option sets {d}.", two=2 * d, d=d),
            Text("{two} divisions", two=2 * d),
        ),
        (
            "half-the-divisions",
            round_size(n, (d // 2,) * 16) if d > 2 else plain,
            Text("{half} steps per power of two; the option sets {d}.", half=d // 2, d=d),
            Text("{half} divisions", half=d // 2),
        ),
        (
            "small-block-rounded-to-1mib" if n <= MIB else "block-rounded-to-20mib",
            MIB if n <= MIB else -(-n // (20 * MIB)) * 20 * MIB,
            Text("a whole 1 MiB block; small blocks round to steps.")
            if n <= MIB
            else Text("20 MiB rounding; 20 MiB is a segment size."),
            Text("a whole 1 MiB block") if n <= MIB else Text("20 MiB rounding"),
        ),
    ]


def _candidates(
    ask: str, n: int, d: int, inputs: dict[str, Any], stats: dict[str, int]
) -> list[Candidate]:
    if ask == INACTIVE_SPLIT:
        segment = stats[RESERVED]
        return [
            free_rest_not_counted(),
            reserved_not_inactive(segment),
            allocated_not_inactive(stats[ALLOCATED]),
            Candidate(
                "plain-512-rounding",
                replay_value(inputs, conf=""),
                Text("the rest without the option, for a plainly 512-rounded block."),
            ),
            *(
                Candidate(
                    name,
                    segment - value,
                    Text(
                        "{label} makes a block of {b}, leaving this rest.",
                        label=label,
                        b=size(value),
                    ),
                )
                for name, value, _, label in _blocks(n, d)
                if value < segment
            ),
        ]
    if ask == ALLOCATED:
        out = [
            Candidate(
                "plain-512-rounding",
                replay_value(inputs, conf=""),
                Text("plain 512-byte rounding, as without the option."),
            ),
            *(Candidate(name, value, why) for name, value, why, _ in _blocks(n, d)),
            Candidate(
                "requested-not-block",
                n,
                Text("the request itself; the allocator rounds it up."),
            ),
        ]
        if stats[RESERVED] != stats[ALLOCATED]:
            out.append(reserved_not_allocated(stats[RESERVED]))
        return out
    out = [
        Candidate(
            "plain-512-rounding",
            replay_value(inputs, conf=""),
            Text("the segment without the option, for a plainly 512-rounded block."),
        ),
        *(
            Candidate(
                name,
                allocation_size(value),
                Text(
                    "{label} makes a block of {b}, with this segment.", label=label, b=size(value)
                ),
            )
            for name, value, _, label in _blocks(n, d)
        ),
        Candidate(
            "block-not-segment",
            stats[ALLOCATED],
            Text("the block; the allocator reserves a whole segment around it."),
        ),
        Candidate(
            "requested-not-segment",
            n,
            Text("exactly the request; the driver is asked for a whole segment."),
        ),
        Candidate(
            "segment-rounded-to-20mib",
            -(-stats[ALLOCATED] // (20 * MIB)) * 20 * MIB,
            Text("a segment rounded to 20 MiB; from 10 MiB on they round to 2 MiB."),
        ),
    ]
    return out


def build(variant: str, params: dict[str, Any]) -> Draft:
    n, d, ask = _request(variant, params), int(params["d"]), str(params["ask"])
    conf = f"roundup_power2_divisions:{d}"
    ops = [malloc("x", n)]
    inputs, run = replay_ops(ops, ask, conf=conf)
    first = run.results[0]
    block = round_size(n, (d,) * 16)
    answer = run.value(ask)
    steps = (
        _rounding_step(n, d, block),
        _segment_step(block, first.grown, first.block),
        conclusion(ask),
    )
    return trace_draft(
        "allocator-config",
        2 if variant != "large" else 3,
        inputs,
        ops_prompt(ops, ask, conf=conf),
        steps,
        answer,
        _candidates(ask, n, d, inputs, run.stats),
        (CONF_DOCS, ALLOCATOR_SOURCE, STATS_DOCS),
    )


FAMILY = trace_family(
    id="roundup-power2",
    topic="allocator-config",
    difficulty=(2, 3),
    description=(
        "roundup_power2_divisions:D: the block (memory_allocated) or segment "
        "(memory_reserved) of one request, with the 512 × D threshold"
    ),
    space=SPACE,
    build=build,
    # the allocator rounds up, so few misconceptions lie above a large answer: the
    # smallest rank is drawn more often where it is possible
    rank_weights=(1.7, 0.8, 1.0, 1.0),
)
