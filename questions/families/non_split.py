"""Family `max-non-split-rounding`: ``max_non_split_rounding_mb`` beside ``max_split_size_mb``.

Blocks of ``max_split_size`` or more are never split. A request of that size or more may
still take a larger cached oversize block whole, if it wastes less than
``max_non_split_rounding`` (20 MiB unless set): ``block.size < size + rounding``
(``get_free_block`` in CUDACachingAllocator.cpp; the option arrived in PyTorch 2.6,
PR #136174; from 2.12 its floor is ``large_segment_size_mb``, 20 MiB by default). A request
below ``max_split_size`` never takes an oversize block, whatever the rounding.
"""

from __future__ import annotations

from typing import Any, Final

from bot.i18n import Localized, Text
from gpu_runner.sim import allocation_size, round_size
from questions.families.misconceptions import allocated_not_reserved, reserved_not_allocated
from questions.families.model import Candidate, Draft, trace_family
from questions.families.narrate import (
    ALLOCATED,
    ALLOCATOR_SOURCE,
    CONF_DOCS,
    RESERVED,
    conclusion,
    ops_text,
    setup,
    size,
    trace_prompt,
)
from questions.families.sizes import MIB
from questions.families.space import Space, grid
from questions.families.trace import free, malloc, replay_ops, replay_value, trace_draft

MAX_SPLIT: Final = (32, 64, 128, 256)  # max_split_size_mb
ROUNDING: Final = (32, 64, 128, 256, 512)  # max_non_split_rounding_mb
BIG: Final = (1.3, 1.7, 2.3, 2.9)  # the cached block, in max_split_size units (not round)
# MiB the request's block is under the cached one (equal to a limit sometimes; negative:
# the request is larger)
WASTE: Final = (-40, 0, 8, 24, 32, 64, 100, 128, 256, 400)
CASES: Final = tuple(
    (m, rounding, big, waste)
    for m in MAX_SPLIT
    for rounding in ROUNDING
    for big in BIG
    for waste in WASTE
    if -(-int(m * big) // 2) * 2 - waste >= 4  # a request of at least 4 MiB
)
SPACE = Space((grid("oversize", case=CASES, ask=(RESERVED, ALLOCATED)),))
JITTER: Final = 511  # bytes off the request: it rounds up to a whole block again


def _sizes(params: dict[str, Any]) -> tuple[int, int, int, int]:
    m_mib, rounding_mib, big_units, waste = params["case"]
    m = int(m_mib) * MIB
    rounding = int(rounding_mib) * MIB
    big = -(-int(m * float(big_units)) // (2 * MIB)) * 2 * MIB
    r = big - int(waste) * MIB - JITTER
    return m, rounding, big, r


def _new_block(block: int, m: int) -> int:
    """x's block in a new segment: split off only below max_split_size with over 1 MiB left."""
    segment = allocation_size(block)
    return block if block < m and segment - block > MIB else segment


def _takes(block: int, m: int, big: int, rounding: int) -> bool:
    return m <= block <= big and big < block + rounding


def _steps(
    m: int, rounding: int, big: int, r: int, taken: bool, ask: str, answer: int
) -> list[Localized]:
    block = round_size(r, (0,) * 16)
    segment = allocation_size(block)
    steps: list[Localized] = [
        Text(
            "Blocks of {M} or more are never split: big's {B} stays cached whole.",
            M=size(m),
            B=size(big),
        )
    ]
    if block < m:
        steps.append(
            Text(
                "x ({r}) is below {M}: no oversize block serves it; a new {g} segment.",
                r=size(r),
                M=size(m),
                g=size(segment),
            )
        )
    elif block > big:
        steps.append(
            Text("x ({r}) exceeds the cached block: a new {g} segment.", r=size(r), g=size(segment))
        )
    else:
        waste = {"r": size(r), "w": size(big - block), "R": size(rounding)}
        steps.append(
            Text(
                "x ({r}) would waste {w}, under the {R} limit: it takes the cached block whole.",
                **waste,
            )
            if taken
            else Text(
                "x ({r}) would waste {w}, not under the {R} limit: a new {g} segment.",
                **waste,
                g=size(segment),
            )
        )
    steps.append(conclusion(ask))
    return steps


def _candidates(
    ask: str, inputs: dict[str, Any], stats: dict[str, int], m: int, rounding: int, big: int, r: int
) -> list[Candidate]:
    block = round_size(r, (0,) * 16)
    segment = allocation_size(block)

    def figure(taken: bool) -> int:
        if ask == RESERVED:
            return big if taken else big + segment
        return big if taken else _new_block(block, m)

    conf_default = f"max_split_size_mb:{m // MIB}"
    out = [
        Candidate(
            "rounding-option-ignored",
            replay_value(inputs, conf=conf_default),
            Text("the figure with the default 20 MiB rounding; this one is {R}.", R=size(rounding)),
        ),
        Candidate(
            "max-split-size-ignored",
            replay_value(inputs, conf=""),
            Text("the figure with neither option: the cached block would be split."),
        ),
        Candidate(
            "rounding-is-inclusive",
            figure(m <= block <= big and big <= block + rounding),
            Text("allows waste equal to the limit; it must be under it."),
        ),
        Candidate(
            "rounding-applies-to-small-requests",
            figure(block <= big and big < block + rounding),
            Text("lets a request below max_split_size take it; it never does."),
        ),
        Candidate(
            "rounding-is-a-block-cap",
            figure(m <= block <= big and big <= rounding),
            Text("reads the option as the largest block a request may take whole."),
        ),
        Candidate(
            "rounding-counts-request",
            figure(m <= block <= big and r < rounding),
            Text("compares the request with the limit; the waste counts."),
        ),
    ]
    # in both of reserved memory's accounts, whether x takes big's block or not
    kept = [
        Candidate(
            "option-reserves-memory",
            stats[RESERVED] + rounding,
            Text("reads the option as memory set aside; it reserves nothing."),
        ),
        Candidate(
            "oversize-block-released",
            segment,
            Text("as if big's block were released; that needs a failed cudaMalloc."),
        ),
        Candidate(
            "request-alone", r, Text("x's request alone; big stays reserved, segments are rounded.")
        ),
    ]
    if ask == RESERVED and _takes(block, m, big, rounding):
        # x takes big's block: a note about how a new segment is rounded would give a
        # false reason; the misconception is that x needs one at all
        return [
            *out,
            allocated_not_reserved(stats[ALLOCATED]),
            *kept,
            Candidate(
                "oversize-request-gets-a-segment",
                big + segment,
                Text("gives x a new segment; it takes big's cached block whole."),
            ),
            Candidate(
                "request-added-to-reserved",
                big + r,
                Text("adds x's bytes; x takes big's cached block, so nothing new is reserved."),
            ),
        ]
    if ask == RESERVED:
        out += [
            allocated_not_reserved(stats[ALLOCATED]),
            Candidate(
                "new-segment-unrounded",
                big + r,
                Text("adds x's bytes as they are; a new segment is rounded up."),
            ),
            *kept,
            Candidate(
                "segment-rounded-to-20mib",
                big + -(-block // (20 * MIB)) * 20 * MIB,
                Text("a segment rounded to 20 MiB; from 10 MiB on they round to 2 MiB."),
            ),
            Candidate(
                "power-of-two-segment",
                big + (1 << (block - 1).bit_length()),
                Text("a power-of-two segment for x; segments round to 2 MiB.")
                if block >= 10 * MIB
                else Text("a power-of-two segment for x; under 10 MiB it gets 20 MiB."),
            ),
            Candidate(
                "twenty-mib-segment",
                big + 20 * MIB,
                Text("a 20 MiB segment for x; that is for requests under 10 MiB."),
            ),
            Candidate(
                "max-split-size-segment",
                big + m,
                Text("a max_split_size segment for x; segments fit the request."),
            ),
        ]
    else:
        out += [
            reserved_not_allocated(stats[RESERVED]),
            Candidate(
                "requested-not-block",
                r,
                Text("x's request; the allocator rounds it up."),
            ),
            Candidate(
                "block-cut-to-size",
                block,
                Text("as if cut to x; oversize blocks and requests are not split."),
            ),
            Candidate(
                "block-plus-waste-limit",
                block + rounding,
                Text("adds the waste limit to x's block."),
            ),
            Candidate(
                "max-split-size-block",
                m,
                Text("the option's size as x's block; it only says what is never split."),
            ),
            Candidate(
                "twenty-mib-block",
                20 * MIB,
                Text("a 20 MiB block; that is a segment size for small requests."),
            ),
            Candidate(
                "power-of-two-rounding",
                1 << (block - 1).bit_length(),
                Text("power-of-two rounding, which only roundup_power2_divisions does."),
            ),
        ]
        if not _takes(block, m, big, rounding):  # x has a segment of its own
            out.append(
                Candidate(
                    "segment-rounded-to-20mib",
                    -(-block // (20 * MIB)) * 20 * MIB,
                    Text("x's segment rounded to 20 MiB; from 10 MiB on they round to 2 MiB."),
                )
            )
        if big >= block:  # x could take big's block: what it would waste means something
            out.append(
                Candidate(
                    "waste-not-block",
                    big - block,
                    Text("the bytes x would waste, not the block it holds."),
                )
            )
    return out


def build(variant: str, params: dict[str, Any]) -> Draft:
    m, rounding, big, r = _sizes(params)
    ask = str(params["ask"])
    conf = f"max_split_size_mb:{m // MIB},max_non_split_rounding_mb:{rounding // MIB}"
    ops = [malloc("big", big), free("big"), malloc("x", r)]
    inputs, run = replay_ops(ops, ask, conf=conf)
    answer = run.value(ask)
    block = round_size(r, (0,) * 16)
    taken = _takes(block, m, big, rounding)
    expected = (
        (big if taken else big + allocation_size(block))
        if ask == RESERVED
        else (big if taken else _new_block(block, m))
    )
    if answer != expected:  # the account must be the simulator's
        raise AssertionError(f"max-non-split-rounding {params}: {answer} != {expected}")
    return trace_draft(
        "allocator-config",
        3,
        inputs,
        trace_prompt(
            Text("{settings} (PyTorch 2.6 or later)", settings=setup(conf)), ops_text(ops), ask
        ),
        _steps(m, rounding, big, r, taken, ask, answer),
        answer,
        _candidates(ask, inputs, run.stats, m, rounding, big, r),
        (
            CONF_DOCS,
            ALLOCATOR_SOURCE,
            "https://github.com/pytorch/pytorch/pull/136174",
        ),
    )


FAMILY = trace_family(
    id="max-non-split-rounding",
    topic="allocator-config",
    difficulty=(3, 3),
    description=(
        "max_non_split_rounding_mb (PyTorch 2.6+) with max_split_size_mb: does a request "
        "take a cached oversize block whole, or get a new segment"
    ),
    space=SPACE,
    build=build,
    rank_weights=(1.45, 0.5, 0.55, 1.6),  # a yes/no outcome: few scenarios allow both ends
)
