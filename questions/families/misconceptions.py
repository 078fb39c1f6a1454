"""Misconceptions shared by several trace families, each computed from the trace."""

from __future__ import annotations

from typing import Any

from gpu_runner.sim import allocation_size, parse_conf, round_size
from questions.families.model import Candidate, Text
from questions.families.trace import release_after_frees, replay_value


def freed_memory_returns(inputs: dict[str, Any], **changes: Any) -> Candidate:
    """Replays the trace with ``empty_cache()`` after every free."""
    return Candidate(
        "freed-memory-returns-to-driver",
        replay_value(inputs, ops=release_after_frees(inputs["ops"]), **changes),
        Text(
            "that assumes del gives memory back to the driver; it stays cached.",
            "υποθέτει ότι το del επιστρέφει μνήμη στον driver· μένει στην cache.",
        ),
    )


def allocated_not_reserved(allocated: int) -> Candidate:
    return Candidate(
        "allocated-not-reserved",
        allocated,
        Text(
            "that is memory_allocated(), the live blocks only.",
            "είναι το memory_allocated(), μόνο τα ζωντανά μπλοκ.",
        ),
    )


def reserved_not_allocated(reserved: int) -> Candidate:
    return Candidate(
        "reserved-not-allocated",
        reserved,
        Text(
            "that is memory_reserved(), which also counts cached free blocks.",
            "είναι το memory_reserved(), που μετρά και τα ελεύθερα μπλοκ της cache.",
        ),
    )


def requested_live_bytes(requested: int) -> Candidate:
    return Candidate(
        "requested-live-bytes",
        requested,
        Text(
            "that is what the live tensors asked for, before rounding and segments.",
            "είναι όσα ζήτησαν οι ζωντανοί τανυστές, πριν από στρογγύλευση και τμήματα.",
        ),
    )


def no_reuse(inputs: dict[str, Any]) -> Candidate:
    """Every malloc a new segment of its own size: nothing cached is ever reused."""
    ops = inputs["ops"]
    divisions = parse_conf(str(inputs["conf"])).roundup_power2_divisions
    return Candidate(
        "no-reuse-of-cached-blocks",
        sum(allocation_size(round_size(op[2], divisions)) for op in ops if op[0] == "malloc"),
        Text(
            "that gives every tensor a new segment; cached free blocks are reused.",
            "δίνει νέο τμήμα σε κάθε τανυστή· τα ελεύθερα μπλοκ της cache επαναχρησιμοποιούνται.",
        ),
    )


def every_request_summed(stats: dict[str, int]) -> Candidate:
    return Candidate(
        "every-request-summed",
        stats["requested_bytes.all.allocated"],
        Text(
            "that adds up every request, freed ones included, as if nothing were reused.",
            "προσθέτει όλα τα αιτήματα, και των αποδεσμευμένων, σαν να μην επαναχρησιμοποιείται "
            "τίποτα.",
        ),
    )
