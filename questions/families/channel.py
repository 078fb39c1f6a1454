"""Per-channel draws that never repeat a scenario.

A channel's questions use the seed `channel_seed(channel key)`; question `i` of family F
is ``gen-F-<seed>-<i>``. The next index for F is one more than the highest the channel's
history (its asked question ids) holds for F, so a channel never sees a scenario twice
until F's variants are exhausted, with no state beyond the history the bot already keeps.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from questions.families.model import Family, GeneratedQuestion
from questions.families.registry import FamilyRegistry, generate

_SEED_BYTES = 6  # 48 bits: plenty of channels, and short ids


def channel_seed(channel_key: str) -> int:
    """The seed of a channel's generated questions (stable across processes)."""
    digest = hashlib.blake2b(channel_key.encode(), digest_size=_SEED_BYTES).digest()
    return int.from_bytes(digest, "big")


@dataclass(frozen=True, slots=True)
class GeneratedId:
    family: str
    seed: int
    index: int


def parse_generated_id(question_id: str, families: FamilyRegistry) -> GeneratedId | None:
    """``gen-<family>-<seed>-<index>`` -> its parts; None for any other id."""
    if not question_id.startswith("gen-"):
        return None
    rest = question_id[4:]
    for family in families.ids():
        if rest.startswith(f"{family}-"):
            parts = rest[len(family) + 1 :].split("-")
            if len(parts) == 2 and all(p.isdigit() for p in parts):
                return GeneratedId(family, int(parts[0]), int(parts[1]))
    return None


def next_indexes(seed: int, history: Iterable[str], families: FamilyRegistry) -> dict[str, int]:
    """Per family, the index of the next question for `seed` given the asked ids."""
    counts = dict.fromkeys(families.ids(), 0)
    for question_id in history:
        parsed = parse_generated_id(question_id, families)
        if parsed is not None and parsed.seed == seed:
            counts[parsed.family] = max(counts[parsed.family], parsed.index + 1)
    return counts


def pick_family(counts: Mapping[str, int], seed: int, families: FamilyRegistry) -> Family:
    """The family asked least so far; ties in an order chosen by the seed and the round."""

    def rank(family: Family) -> tuple[int, bytes]:
        used = counts.get(family.id, 0)
        tie = hashlib.blake2b(f"{seed}:{used}:{family.id}".encode(), digest_size=8).digest()
        return used, tie

    return min(families, key=rank)


def next_for_channel(
    families: FamilyRegistry,
    channel_key: str,
    history: Iterable[str],
    family: str | None = None,
) -> GeneratedQuestion:
    """The channel's next generated question (of `family`, or of the least-asked family).

    `history` is the ids asked in the channel (any order; other ids are ignored).
    Raises `GenerationError` for an unknown family.
    """
    seed = channel_seed(channel_key)
    counts = next_indexes(seed, history, families)
    chosen = families.require(family) if family is not None else pick_family(counts, seed, families)
    return generate(chosen, seed, counts[chosen.id])
