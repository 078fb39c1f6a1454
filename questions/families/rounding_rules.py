"""Rounding rules, misconceptions and the draft shared by `request-rounding`'s variants."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bot.i18n import Localized, Text
from questions.families.model import Candidate, Draft
from questions.families.narrate import (
    ALLOCATOR_DOCS,
    ALLOCATOR_SOURCE,
    INACTIVE_SPLIT,
    STATS_DOCS,
    ops_prompt,
)
from questions.families.trace import trace_draft


def up(n: int, step: int) -> int:
    """n rounded up to a multiple of step (at least one step)."""
    return max(step, -(-n // step) * step)


def next_power_of_two(n: int) -> int:
    return 1 << (n - 1).bit_length()


POWER_OF_TWO = Text("power-of-two rounding, which only roundup_power2_divisions does.")
ALIGNMENT = Text("256-byte rounding, cudaMalloc's alignment; blocks round to 512 B.")
PAGES = Text("4 KiB page rounding, as on the host; blocks round to 512 B.")
DIVISIONS = Text("roundup_power2_divisions:4 rounding (off by default).")


def rounding_draft(
    difficulty: int,
    inputs: dict[str, Any],
    steps: Iterable[Localized],
    answer: int,
    candidates: Iterable[Candidate],
) -> Draft:
    """A draft of either variant: the trace's ops on default settings, asked of the
    allocator (a block or a segment) or of memory_stats() (a split segment's free rest)."""
    ask = str(inputs["ask"])
    return trace_draft(
        "memory-stats" if ask == INACTIVE_SPLIT else "caching-allocator",
        difficulty,
        inputs,
        ops_prompt(inputs["ops"], ask),
        steps,
        answer,
        candidates,
        (ALLOCATOR_DOCS, ALLOCATOR_SOURCE, STATS_DOCS),
    )
