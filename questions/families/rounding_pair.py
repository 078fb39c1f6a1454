"""`request-rounding`, variant `pair`: two small tensors share one 2 MiB segment; their
blocks (memory_allocated) or the segment's free rest (inactive_split_bytes)."""

from __future__ import annotations

from typing import Any

from bot.i18n import Text
from questions.families.misconceptions import free_rest_not_counted
from questions.families.model import Candidate, Draft
from questions.families.narrate import ALLOCATED, conclusion, size
from questions.families.rounding_rules import (
    ALIGNMENT,
    PAGES,
    POWER_OF_TWO,
    next_power_of_two,
    rounding_draft,
    up,
)
from questions.families.sizes import KIB, MIB
from questions.families.trace import malloc, replay_ops


def _pair_allocated(a: int, b: int, ra: int, rb: int) -> list[Candidate]:
    return [
        Candidate(
            "requested-not-block", a + b, Text("the requests themselves; blocks round up to 512 B.")
        ),
        Candidate("cudamalloc-alignment", up(a, 256) + up(b, 256), ALIGNMENT),
        Candidate("page-rounding", up(a, 4 * KIB) + up(b, 4 * KIB), PAGES),
        Candidate(
            "total-rounded-once",
            up(a + b, 512),
            Text("rounds the total once; each block is rounded on its own."),
        ),
        Candidate("only-last-tensor", rb, Text("y's block alone; x's block is still live.")),
        Candidate("only-last-request", b, Text("y's request alone, unrounded; x is live too.")),
        Candidate(
            "whole-segment-allocated",
            2 * MIB,
            Text("the whole 2 MiB segment; its free rest is not allocated."),
        ),
        Candidate(
            "one-segment-per-tensor",
            4 * MIB,
            Text("a whole 2 MiB segment per tensor; y is cut from x's segment."),
        ),
        Candidate(
            "power-of-two-rounding", next_power_of_two(a) + next_power_of_two(b), POWER_OF_TWO
        ),
    ]


def _pair_inactive(a: int, b: int, ra: int, rb: int) -> list[Candidate]:
    segment = 2 * MIB
    return [
        free_rest_not_counted(),
        Candidate(
            "request-not-rounded",
            segment - a - b,
            Text("subtracts the requests, not the 512 B-rounded blocks."),
        ),
        Candidate(
            "reserved-not-inactive",
            segment,
            Text("the whole segment; the blocks in use are not inactive."),
        ),
        Candidate(
            "one-segment-per-tensor",
            2 * segment - ra - rb,
            Text("gives y a segment of its own; it is cut from x's segment."),
        ),
        Candidate(
            "second-block-forgotten",
            segment - ra,
            Text("leaves y out; its block is cut from the same free rest."),
        ),
        Candidate(
            "page-rounded-block",
            segment - up(a, 4 * KIB) - up(b, 4 * KIB),
            Text("subtracts 4 KiB-rounded blocks; blocks round to 512 B."),
        ),
        Candidate(
            "allocated-not-inactive",
            ra + rb,
            Text("the blocks in use; inactive_split_bytes is the free rest."),
        ),
        Candidate(
            "first-block-forgotten",
            segment - rb,
            Text("leaves x out; its block is in the same segment."),
        ),
        Candidate(
            "one-segment-each-unrounded",
            2 * segment - a - b,
            Text("a segment per tensor, minus unrounded requests: two errors."),
        ),
        Candidate(
            "requests-not-inactive",
            a + b,
            Text("the requests; inactive_split_bytes is the segment's free rest."),
        ),
        Candidate(
            "rounding-padding-is-inactive",
            ra - a + rb - b,
            Text("the blocks' 512 B padding; the segment's free rest is inactive."),
        ),
    ]


def build_pair(params: dict[str, Any]) -> Draft:
    a = int(params["k"]) * 512 + int(params["r"])
    b = int(params["j"]) * 512 + 512 - int(params["r"])
    ask = str(params["ask"])
    inputs, run = replay_ops([malloc("x", a), malloc("y", b)], ask)
    ra, rb = run.results[0].block, run.results[1].block
    answer = run.value(ask)
    candidates = (_pair_allocated if ask == ALLOCATED else _pair_inactive)(a, b, ra, rb)
    steps = (
        Text(
            "x and y round up to {ra} and {rb} blocks (multiples of 512 B).",
            ra=size(ra),
            rb=size(rb),
        ),
        Text("Both are small-pool blocks: x opens a 2 MiB segment, y is cut from its free rest."),
        conclusion(ask),
    )
    return rounding_draft(1 if ask == ALLOCATED else 2, inputs, steps, answer, candidates)
