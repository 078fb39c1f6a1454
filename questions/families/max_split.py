"""Family `max-split-size`: an oversize cached block and one more request.

With ``max_split_size_mb:M`` blocks of M or more are never split; a smaller request cannot
use them, and a larger one only when less than 20 MiB (``max_non_split_rounding_mb``)
would be wasted (spec 1.5-1.6). A request of M or more is never split either, so its own
new segment is its block; a smaller one's is split only when more than 1 MiB is left.
"""

from __future__ import annotations

from typing import Any

from bot.formats import Size
from bot.i18n import Localized, Text
from gpu_runner.sim import allocation_size, round_size
from questions.families.misconceptions import (
    allocated_not_reserved,
    freed_memory_returns,
    reserved_not_allocated,
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
from questions.families.trace import free, malloc, replay_ops, replay_value, trace_draft

# max_split_size_mb above 20: torch 2.5's parser wants > 20, 2.6 and later >= 20
SPACE = Space(
    (
        grid(
            "oversize",
            m=(24, 32, 40, 48, 64, 80, 96, 128, 160, 200, 256),
            f=(1, 1.25, 1.5, 2, 3, 4),
            h=(0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 0.98),
            ask=(RESERVED, ALLOCATED),
        ),
    )
)
WASTE_LIMIT = 20 * MIB  # max_non_split_rounding_mb's default


class Case:
    """What happens to x: the cached oversize block is taken whole, or x gets a segment."""

    def __init__(self, m: int, big: int, r: int) -> None:
        self.m, self.big, self.r = m, big, r
        self.block = round_size(r, (0,) * 16)
        self.segment = allocation_size(self.block)
        self.small_request = self.block < m  # below max_split_size: an oversize block won't do
        self.fits = self.block <= big
        self.taken = not self.small_request and self.fits and big - self.block < WASTE_LIMIT
        # x's own new segment is split only for a request below max_split_size with more
        # than 1 MiB left over
        self.split = self.small_request and self.segment - self.block > MIB

    @property
    def x_block(self) -> int:
        if self.taken:
            return self.big
        return self.block if self.split else self.segment

    @property
    def reserved(self) -> int:
        return self.big if self.taken else self.big + self.segment


def _steps(c: Case, ask: str, answer: int) -> list[Localized]:
    steps: list[Localized] = [
        Text(
            "max_split_size_mb:{m}: blocks of {M} or more are never split; big ({B}) stays "
            "cached whole.",
            m=c.m // MIB,
            M=size(c.m),
            B=size(c.big),
        )
    ]
    if c.small_request:
        below = {"r": size(c.r), "M": size(c.m), "g": size(c.segment)}
        steps.append(
            Text(
                "x ({r}) is below {M}: no oversize block serves it; a new {g} segment, its "
                "rest (over 1 MiB) split off.",
                **below,
            )
            if c.split
            else Text(
                "x ({r}) is below {M}: no oversize block serves it; a new {g} segment, all "
                "x's ({rest} left, not over 1 MiB).",
                **below,
                rest=size(c.segment - c.block),
            )
        )
    elif c.taken:
        steps.append(
            Text("x ({r}) wastes under 20 MiB of the cached block: it takes it whole.", r=size(c.r))
        )
    elif c.fits:
        steps.append(
            Text(
                "x ({r}) would waste {w}, not under 20 MiB: a new {g} segment, unsplit.",
                r=size(c.r),
                w=Size(c.big - c.block),
                g=size(c.segment),
            )
        )
    else:
        steps.append(
            Text(
                "x ({r}) exceeds the cached block: a new {g} segment, unsplit.",
                r=size(c.r),
                g=size(c.segment),
            )
        )
    steps.append(conclusion(ask))
    return steps


def _why_not_taken(c: Case) -> Localized:
    if c.small_request:
        return Text("an oversize block never serves a request below max_split_size.")
    return Text(
        "x may take it only if under 20 MiB is wasted; {w} would be.", w=Size(c.big - c.block)
    )


def _inactive(c: Case, stats: dict[str, int]) -> list[Candidate]:
    rest = c.segment - c.block
    out = [
        Candidate(
            "oversize-block-is-inactive",
            c.big + rest,
            Text("counts big's cached block; it is not split, so it is releasable."),
        ),
        Candidate(
            "free-rest-not-counted",
            0,
            Text("as if x's free rest were releasable; in a split segment it is not."),
        ),
        Candidate(
            "request-not-rounded",
            c.segment - c.r,
            Text("subtracts x's request, not its 512 B-rounded block."),
        ),
        Candidate(
            "reserved-not-inactive",
            stats[RESERVED],
            Text("all reserved memory, live blocks included."),
        ),
        Candidate(
            "allocated-not-inactive",
            stats[ALLOCATED],
            Text("that is memory_allocated(), the live block, not the free rest."),
        ),
        Candidate(
            "only-oversize-block",
            c.big,
            Text("big's cached block; being unsplit, it is not inactive_split."),
        ),
        Candidate(
            "segment-not-rest",
            c.segment,
            Text("x's whole segment; only its free rest is inactive."),
        ),
        Candidate(
            "page-rounded-block",
            c.segment - -(-c.r // 4096) * 4096,
            Text("subtracts a 4 KiB-rounded block; blocks round to 512 B."),
        ),
        Candidate(
            "rounding-padding-is-inactive",
            c.block - c.r,
            Text("x's 512 B padding; inactive is the segment's free rest."),
        ),
        Candidate(
            "x-cut-from-oversize-block",
            c.big - c.block,
            Text("as if x were cut from big's block; it serves only big requests."),
        ),
    ]
    if 10 * MIB <= c.block < 20 * MIB:
        out.append(
            Candidate(
                "rest-of-20mib-segment",
                20 * MIB - c.block,
                Text("the rest of 20 MiB; from 10 MiB on the segment is x rounded to 2 MiB."),
            )
        )
    return out


def _candidates(
    c: Case, ask: str, inputs: dict[str, Any], stats: dict[str, int]
) -> list[Candidate]:
    if ask == INACTIVE_SPLIT:
        return _inactive(c, stats)
    ignored = Candidate(
        "max-split-size-ignored",
        replay_value(inputs, conf=""),
        Text("the figure without max_split_size_mb: x would take the cached block."),
    )
    waste_rule_as_split_rule = Candidate(
        "split-threshold-for-oversize",
        c.big + c.segment if ask == RESERVED else c.segment,
        Text("applies the 1 MiB split rule; oversize blocks may waste 20 MiB."),
    )
    waste_is_max_split = Candidate(
        "waste-limit-is-max-split-size",
        c.big,
        Text("allows waste up to max_split_size; the limit is 20 MiB."),
    )
    out: list[Candidate] = [ignored]
    if c.taken:
        out.append(waste_rule_as_split_rule)
    elif c.fits:
        out.append(
            Candidate(
                "oversize-block-always-taken",
                c.big,
                _why_not_taken(c),
            )
        )
        if not c.small_request and c.big - c.block < c.m:
            out.append(waste_is_max_split)
    if ask == RESERVED:
        out += [
            freed_memory_returns(inputs),
            allocated_not_reserved(stats[ALLOCATED]),
            Candidate(
                "max-split-size-caps-segments",
                min(c.big, c.m) + (0 if c.taken else c.segment),
                Text("reads it as a segment size cap; it only stops splitting."),
            ),
            Candidate(
                "option-reserves-memory",
                c.reserved + c.m,
                Text("reads max_split_size_mb as memory set aside; it reserves nothing."),
            ),
            Candidate(
                "cached-block-not-counted",
                c.x_block if c.taken else c.segment,
                Text("x's memory alone; big's cached block stays reserved too."),
            ),
        ]
        if c.taken:  # no new segment: how one is rounded is not the reason
            return [
                *out,
                Candidate(
                    "request-added-to-reserved",
                    c.big + c.r,
                    Text("adds x's bytes; x takes big's cached block, so nothing new is reserved."),
                ),
            ]
        return [
            *out,
            Candidate(
                "new-segment-unrounded",
                c.big + c.r,
                Text("adds x's bytes as they are; a new segment is rounded up."),
            ),
            Candidate(
                "new-segment-is-the-block",
                c.big + c.block,
                Text("adds x's 512 B-rounded block; its segment is rounded to 2 MiB.")
                if c.block >= 10 * MIB
                else Text("adds x's 512 B-rounded block; under 10 MiB its segment is 20 MiB."),
            ),
            Candidate(
                "segment-rounded-to-20mib",
                c.big + -(-c.block // (20 * MIB)) * 20 * MIB,
                Text("x's segment rounded to 20 MiB; from 10 MiB on they round to 2 MiB."),
            ),
            Candidate(
                "power-of-two-segment",
                c.big + (1 << (c.block - 1).bit_length()),
                Text("a power-of-two segment for x; segments round to 2 MiB.")
                if c.block >= 10 * MIB
                else Text("a power-of-two segment for x; under 10 MiB it gets 20 MiB."),
            ),
        ]
    out += [
        reserved_not_allocated(stats[RESERVED]),
        Candidate(
            "requested-not-block",
            c.r,
            Text("x's request; blocks are rounded up to 512 B."),
        ),
        Candidate(
            "max-split-size-caps-blocks",
            c.m,
            Text("reads the option as a block size cap; it only stops splitting."),
        ),
        Candidate(
            "both-tensors-counted",
            c.big + c.x_block,
            Text("still counts big; del big freed its block."),
        ),
        Candidate(
            "power-of-two-rounding",
            1 << (c.block - 1).bit_length(),
            Text("power-of-two rounding, which only roundup_power2_divisions does."),
        ),
    ]
    if not c.taken:  # x has a segment of its own
        out.append(
            Candidate(
                "segment-rounded-to-20mib",
                -(-c.block // (20 * MIB)) * 20 * MIB,
                Text("x's segment rounded to 20 MiB; from 10 MiB on they round to 2 MiB."),
            )
        )
    if c.x_block != c.block:
        out.append(Candidate("x-block-cut-to-size", c.block, _why_whole(c)))
    else:
        out.append(
            Candidate(
                "x-block-is-whole-segment",
                c.segment,
                Text("the whole new segment; its rest, over 1 MiB, is split off."),
            )
        )
    return out


def _why_whole(c: Case) -> Localized:
    if c.taken:
        return Text("x takes the cached block whole: oversize blocks are never split.")
    if c.small_request:
        return Text(
            "only {rest} of x's segment is left (not over 1 MiB): it is all x's.",
            rest=size(c.segment - c.block),
        )
    return Text("a request of max_split_size or more is never split: x gets it all.")


def build(variant: str, params: dict[str, Any]) -> Draft:
    m = int(params["m"]) * MIB
    big = -(-int(m * float(params["f"])) // (2 * MIB)) * 2 * MIB
    r = max(MIB + MIB // 2, int(big * float(params["h"])) // MIB * MIB) + 1000
    case = Case(m, big, r)
    ask = str(params["ask"])
    if ask == ALLOCATED and case.split:
        # x's block is then just its request rounded to 512 B, with nearly every
        # misconception above it; ask instead for the free rest of x's split segment
        ask = INACTIVE_SPLIT
    conf = f"max_split_size_mb:{m // MIB}"
    ops = [malloc("big", big), free("big"), malloc("x", r)]
    inputs, run = replay_ops(ops, ask, conf=conf)
    answer = run.value(ask)
    expected = {
        RESERVED: case.reserved,
        ALLOCATED: case.x_block,
        INACTIVE_SPLIT: case.segment - case.block,
    }[ask]
    if answer != expected:  # the case analysis must be the simulator's
        raise AssertionError(f"max-split-size case {vars(case)} gives {answer}, not {expected}")
    return trace_draft(
        "allocator-config",
        3,
        inputs,
        ops_prompt(ops, ask, conf=conf),
        _steps(case, ask, answer),
        answer,
        _candidates(case, ask, inputs, run.stats),
        (CONF_DOCS, ALLOCATOR_SOURCE, STATS_DOCS),
    )


FAMILY = trace_family(
    id="max-split-size",
    topic="allocator-config",
    difficulty=(3, 3),
    description=(
        "max_split_size_mb: a cached oversize block and one more request; is it taken "
        "whole, or passed over for a new segment (and is that one split)"
    ),
    space=SPACE,
    build=build,
    rank_weights=(1.15, 1.0, 0.85, 1.0),  # measured: evens out the ranks
)
