"""Family `request-rounding`: one tensor in a fresh process; its block, its segment, or the
free rest of that segment.

Teaches the 512-byte rounding, the small/large pool boundary (1 MiB), the 2 MiB and 20 MiB
segments, 2 MiB rounding from 10 MiB on, and that a large-pool remainder of at most 1 MiB
stays attached to the block (spec 1.2-1.6); the free rest of a split segment is
`inactive_split_bytes`, which `empty_cache()` cannot release.
"""

from __future__ import annotations

from typing import Any

from bot.i18n import Localized, Text
from gpu_runner.sim import allocation_size, round_size
from questions.families.misconceptions import (
    allocated_not_inactive,
    free_rest_not_counted,
    reserved_not_inactive,
)
from questions.families.model import Candidate, Draft, trace_family
from questions.families.narrate import ALLOCATED, INACTIVE_SPLIT, RESERVED, conclusion, size
from questions.families.rounding_pair import build_pair
from questions.families.rounding_rules import (
    ALIGNMENT,
    DIVISIONS,
    PAGES,
    POWER_OF_TWO,
    next_power_of_two,
    rounding_draft,
    up,
)
from questions.families.sizes import KIB, MIB
from questions.families.space import Space, grid
from questions.families.trace import malloc, replay_ops

# A small or medium request's segment is always 2 or 20 MiB, so memory_reserved() is asked
# only where the segment depends on the request; a lone small block's memory_allocated()
# is the request rounded to 512 B, where nearly every misconception lies above the answer,
# so one tensor asks for the segment's free rest and the block is asked with two tensors.
SMALL_ASKS = (ALLOCATED, INACTIVE_SPLIT)
SPACE = Space(
    (
        grid("small", k=range(0, 2048), r=(1, 257), ask=(INACTIVE_SPLIT,)),
        grid("pair", k=range(1, 1024, 3), j=range(2, 1024, 5), r=(1, 257), ask=SMALL_ASKS),
        grid("medium", m=range(17, 160), r=(1, 1000, 40000), ask=(INACTIVE_SPLIT,)),
        grid("large", m=range(40, 1200), r=(1, 4095, 100000), ask=(ALLOCATED, RESERVED)),
    )
)


def _request(variant: str, p: dict[str, Any]) -> int:
    if variant in ("small", "pair"):
        return int(p["k"]) * 512 + int(p["r"])
    step = 64 * KIB if variant == "medium" else 256 * KIB
    return int(p["m"]) * step + int(p["r"])


def _rounding_step(n: int, block: int) -> Localized:
    if n < 512:
        return Text("Below 512 B, so the block is 512 bytes.")
    if n == block:
        return Text("{n} is already a multiple of 512 B.", n=size(n))
    return Text("{n} rounds up to a block of {b} (a multiple of 512 B).", n=size(n), b=size(block))


def _segment_step(block: int, segment: int) -> Localized:
    if block <= MIB:
        return Text("At most 1 MiB: small pool, 2 MiB segments.")
    if block < 10 * MIB:
        return Text("Between 1 and 10 MiB: large pool, one 20 MiB segment.")
    return Text("10 MiB or more: large pool, a segment rounded up to 2 MiB: {s}.", s=size(segment))


def _split_step(block: int, segment: int, split: bool) -> Localized:
    rest = segment - block
    if block <= MIB:
        return Text("The block is cut from it; the free rest ({r}) stays cached.", r=size(rest))
    if split:
        return Text("{r} is left, over 1 MiB, so it is split off and stays cached.", r=size(rest))
    if rest == 0:
        return Text("The block fills the segment exactly.")
    return Text(
        "Only {r} would be left (not over 1 MiB): the block is the whole segment.", r=size(rest)
    )


def _allocated(n: int, rounded: int, segment: int, split: bool) -> list[Candidate]:
    out = [
        Candidate("requested-not-block", n, Text("the request itself; blocks round up to 512 B.")),
        Candidate("cudamalloc-alignment", up(n, 256), ALIGNMENT),
        Candidate("page-rounding", up(n, 4 * KIB), PAGES),
        Candidate("power-of-two-rounding", next_power_of_two(n), POWER_OF_TWO),
        Candidate(
            "block-rounded-to-2mib",
            up(n, 2 * MIB),
            Text("2 MiB rounding, a rule for segments of 10 MiB and up."),
        ),
        Candidate("power2-divisions-by-default", round_size(n, (4,) * 16), DIVISIONS),
    ]
    if rounded > MIB:
        out.append(
            Candidate(
                "block-rounded-to-1mib",
                up(n, MIB),
                Text("1 MiB rounding; large-pool blocks round to 512 B too."),
            )
        )
        out.append(
            Candidate(
                "block-rounded-to-20mib",
                up(n, 20 * MIB),
                Text("20 MiB rounding; 20 MiB is a segment size, not a block step."),
            )
        )
    if split:
        out.append(
            Candidate(
                "block-is-whole-segment",
                segment,
                Text("the whole segment; its free rest is not allocated."),
            )
        )
    else:
        out.append(
            Candidate(
                "large-remainder-always-split",
                rounded,
                Text("as if the rest were split off; only a rest over 1 MiB is."),
            )
        )
    return out


def _wrong_segment(rounded: int) -> Candidate:
    if rounded <= MIB:
        return Candidate(
            "wrong-segment-size",
            20 * MIB,
            Text("a large-pool segment; up to 1 MiB the segment is 2 MiB."),
        )
    if rounded < 10 * MIB:
        return Candidate(
            "wrong-segment-size",
            up(rounded, 2 * MIB),
            Text("2 MiB rounding; from 1 to 10 MiB the segment is 20 MiB."),
        )
    return Candidate(
        "wrong-segment-size",
        up(rounded, 20 * MIB),
        Text("20 MiB rounding; from 10 MiB on segments round to 2 MiB."),
    )


def _reserved(n: int, rounded: int) -> list[Candidate]:
    out = [
        Candidate(
            "requested-not-segment",
            n,
            Text("exactly the request; the driver is asked for a whole segment."),
        ),
        Candidate(
            "block-not-segment",
            rounded,
            Text("the block; a whole segment is reserved around it."),
        ),
        _wrong_segment(rounded),
        Candidate("power-of-two-rounding", next_power_of_two(n), POWER_OF_TWO),
        Candidate(
            "power2-divisions-by-default",
            allocation_size(round_size(n, (4,) * 16)),
            Text("the segment with roundup_power2_divisions:4 (off by default)."),
        ),
    ]
    if rounded > MIB:
        out.append(
            Candidate(
                "page-rounding",
                up(n, 4 * KIB),
                Text("the request in 4 KiB pages; the segment rounds up to 2 MiB."),
            )
        )
        out.append(
            Candidate(
                "segment-rounded-to-1mib",
                up(rounded, MIB),
                Text("1 MiB rounding; segments of 10 MiB and up round to 2 MiB."),
            )
        )
    if rounded <= MIB:
        out.append(
            Candidate(
                "small-segment-is-1mib",
                MIB,
                Text("1 MiB is the small pool's largest block, not its segment size."),
            )
        )
    return out


def _inactive(n: int, rounded: int, segment: int) -> list[Candidate]:
    out = [
        free_rest_not_counted(),
        Candidate(
            "request-not-rounded",
            segment - n,
            Text("subtracts the request, not the 512 B-rounded block."),
        ),
        reserved_not_inactive(segment),
        allocated_not_inactive(rounded),
        Candidate(
            "page-rounded-block",
            segment - up(n, 4 * KIB),
            Text("subtracts a 4 KiB-rounded block; blocks round to 512 B."),
        ),
        Candidate(
            "cudamalloc-alignment",
            segment - up(n, 256),
            Text("subtracts a 256 B-rounded block; blocks round to 512 B."),
        ),
        Candidate(
            "rounding-padding-is-inactive",
            rounded - n,
            Text("the block's 512 B padding; the segment's free rest is inactive."),
        ),
    ]
    out.append(
        Candidate(
            "request-not-inactive",
            n,
            Text("the request; inactive_split_bytes is the segment's free rest."),
        )
    )
    wrong = int(_wrong_segment(rounded).value)
    if wrong > rounded:
        out.append(
            Candidate(
                "wrong-segment-size",
                wrong - rounded,
                Text("the rest of a segment of the wrong size ({s}).", s=size(wrong)),
            )
        )
        out.append(
            Candidate(
                "wrong-segment-unrounded-request",
                wrong - n,
                Text("a segment of {s} minus the unrounded request: two errors.", s=size(wrong)),
            )
        )
    if rounded <= MIB:
        out.append(
            Candidate(
                "small-segment-is-1mib",
                MIB - rounded,
                Text("the rest of 1 MiB; small-pool segments are 2 MiB."),
            )
        )
        out.append(
            Candidate(
                "small-segment-1mib-unrounded",
                MIB - n,
                Text("1 MiB minus the unrounded request: two errors."),
            )
        )
    return out


def build(variant: str, params: dict[str, Any]) -> Draft:
    if variant == "pair":
        return build_pair(params)
    n = _request(variant, params)
    ask = str(params["ask"])
    inputs, run = replay_ops([malloc("x", n)], ask)
    first = run.results[0]
    rounded = max(512, -(-n // 512) * 512)
    segment = first.grown
    answer = run.value(ask)
    if ask == ALLOCATED:
        candidates = _allocated(n, rounded, segment, first.split)
    elif ask == RESERVED:
        candidates = _reserved(n, rounded)
    else:
        candidates = _inactive(n, rounded, segment)
    steps = (
        _rounding_step(n, rounded),
        _segment_step(rounded, segment),
        _split_step(rounded, segment, first.split),
        conclusion(ask),
    )
    return rounding_draft(2, inputs, steps, answer, candidates)


FAMILY = trace_family(
    id="request-rounding",
    topic="caching-allocator",
    difficulty=(1, 2),
    description=(
        "One tensor in a fresh process: its block (memory_allocated), its segment "
        "(memory_reserved) or the segment's free rest (inactive_split_bytes): 512 B "
        "rounding, small/large pool, 2/20 MiB segments, splitting"
    ),
    space=SPACE,
    build=build,
    rank_weights=(1.3, 0.8, 0.8, 1.1),  # measured: evens out the ranks
)
