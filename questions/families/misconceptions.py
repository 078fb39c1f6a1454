"""Misconceptions shared by several trace families, each computed from the trace."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.i18n import Localized, Text
from gpu_runner.sim import allocation_size, parse_conf, round_size
from questions.families.model import Candidate
from questions.families.trace import empty_cache, release_after_frees, replay_value


def freed_memory_returns(inputs: dict[str, Any], **changes: Any) -> Candidate:
    """Replays the trace with ``empty_cache()`` after every free."""
    return Candidate(
        "freed-memory-returns-to-driver",
        replay_value(inputs, ops=release_after_frees(inputs["ops"]), **changes),
        Text("as if del gave memory back to the driver; it stays cached."),
    )


def live_segments_only(inputs: dict[str, Any]) -> Candidate:
    """Reserved as if ``empty_cache()`` ran at the end: the segments holding live blocks."""
    return Candidate(
        "cached-segments-not-counted",
        replay_value(inputs, ops=[*inputs["ops"], empty_cache()], ask="reserved_bytes.all.current"),
        Text("only segments with live blocks; free cached ones count too."),
    )


def allocated_not_reserved(allocated: int) -> Candidate:
    return Candidate(
        "allocated-not-reserved",
        allocated,
        Text("that is memory_allocated(), the live blocks only."),
    )


def reserved_not_allocated(reserved: int) -> Candidate:
    return Candidate(
        "reserved-not-allocated",
        reserved,
        Text("that is memory_reserved(), cached free blocks included."),
    )


def free_rest_not_counted() -> Candidate:
    """Asked for a split segment's free rest (``inactive_split_bytes``): none."""
    return Candidate(
        "free-rest-not-counted",
        0,
        Text("as if the free rest were releasable; in a split segment it is not."),
    )


def reserved_not_inactive(segment: int) -> Candidate:
    return Candidate(
        "reserved-not-inactive",
        segment,
        Text("the whole segment; the block in use is not inactive."),
    )


def allocated_not_inactive(block: int) -> Candidate:
    return Candidate(
        "allocated-not-inactive",
        block,
        Text("the block in use; inactive_split_bytes is the free rest."),
    )


def requested_live_bytes(requested: int) -> Candidate:
    return Candidate(
        "requested-live-bytes",
        requested,
        Text("what the live tensors asked for, before rounding and segments."),
    )


def no_reuse(inputs: dict[str, Any]) -> Candidate:
    """Every malloc a new segment of its own size: nothing cached is ever reused."""
    ops = inputs["ops"]
    divisions = parse_conf(str(inputs["conf"])).roundup_power2_divisions
    return Candidate(
        "no-reuse-of-cached-blocks",
        sum(allocation_size(round_size(op[2], divisions)) for op in ops if op[0] == "malloc"),
        Text("a new segment for every tensor; cached free blocks are reused."),
    )


def every_request_summed(stats: dict[str, int]) -> Candidate:
    return Candidate(
        "every-request-summed",
        stats["requested_bytes.all.allocated"],
        Text("every request added up, freed ones too, as if nothing were reused."),
    )


def peak_not_current(stats: dict[str, int], ask: str) -> Candidate:
    key = ask.replace(".current", ".peak")
    return Candidate(
        "peak-not-current",
        stats[key],
        Text("that is the peak, not the current value."),
    )


def gb_for_gib(value: float) -> Candidate:
    """A formula answer computed in decimal GB and shown as GiB."""
    return Candidate(
        "gb-read-as-gib",
        value * 2**30 / 10**9,
        Text("divides by 10^9 and calls it GiB; a GiB is 2^30 bytes."),
    )


def compounds(answer: float, singles: Sequence[Candidate]) -> list[Candidate]:
    """Every two labelled errors at once: a belief that gets both wrong computes
    ``answer × (v1 / answer) × (v2 / answer)``. That holds when at least one of the two
    scales the whole answer (a wrong byte count, layer count...); errors that add or drop a
    term are marked with a factor starting with "+" and never combined with each other."""
    labelled = [c for c in singles if c.label is not None and c.value > 0]
    out = []
    for i, first in enumerate(labelled):
        for second in labelled[i + 1 :]:
            if first.factor == second.factor:
                continue  # two errors on one factor are not one belief
            if first.factor.startswith("+") and second.factor.startswith("+"):
                continue  # two added terms do not multiply
            out.append(
                Candidate(
                    f"{first.misconception}-and-{second.misconception}",
                    first.value * second.value / answer,
                    Text("two errors: {a} and {b}.", a=_label(first), b=_label(second)),
                )
            )
    return out


def _label(candidate: Candidate) -> Localized:
    assert candidate.label is not None
    return candidate.label
