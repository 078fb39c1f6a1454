"""Per-channel draws: seeded by the channel, indexed by its history, never repeating."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from questions.families import (
    GenerationError,
    channel_seed,
    default_families,
    generate,
    next_for_channel,
    parse_generated_id,
)

FAMILIES = default_families()


def fingerprint(inputs: object) -> str:
    return json.dumps(inputs, sort_keys=True)


def test_a_channel_never_sees_the_same_scenario_and_families_take_turns() -> None:
    history: list[str] = []
    seen: set[tuple[str, str]] = set()
    for _ in range(3 * len(FAMILIES)):
        q = next_for_channel(FAMILIES, "slack:T1:C1", history)
        key = (q.family, fingerprint(q.inputs))
        assert key not in seen, q.id
        seen.add(key)
        history.insert(0, q.id)  # newest first, as the bot keeps it
    parsed = [parse_generated_id(q, FAMILIES) for q in history]
    per_family = Counter(p.family for p in parsed if p is not None)
    assert per_family == dict.fromkeys(FAMILIES.ids(), 3)


def test_asking_one_family_walks_its_scenarios_in_order() -> None:
    history = ["fragmentation-what-is-it", "gen-kv-cache-size-1-0"]  # other ids are ignored
    first = next_for_channel(FAMILIES, "discord:G:C", history, family="kv-cache-size")
    seed = channel_seed("discord:G:C")
    assert first.id == f"gen-kv-cache-size-{seed}-0"
    second = next_for_channel(FAMILIES, "discord:G:C", [first.id, *history], "kv-cache-size")
    assert second.id == f"gen-kv-cache-size-{seed}-1"
    assert second == generate(FAMILIES.require("kv-cache-size"), seed, 1)
    assert fingerprint(second.inputs) != fingerprint(first.inputs)


def test_channels_get_different_stable_seeds() -> None:
    assert channel_seed("slack:T1:C1") == channel_seed("slack:T1:C1")
    assert channel_seed("slack:T1:C1") != channel_seed("slack:T1:C2")
    assert 0 <= channel_seed("x") < 2**48


def test_generated_ids_parse_back_and_other_ids_do_not() -> None:
    parsed = parse_generated_id("gen-request-rounding-42-7", FAMILIES)
    assert parsed is not None
    assert (parsed.family, parsed.seed, parsed.index) == ("request-rounding", 42, 7)
    for other in ("kv-cache-gqa-batch-size", "gen-no-such-family-1-2", "gen-kv-cache-size-x-1"):
        assert parse_generated_id(other, FAMILIES) is None


def test_an_unknown_family_names_the_known_ones() -> None:
    with pytest.raises(GenerationError, match="unknown question family 'nope'; known families: "):
        next_for_channel(FAMILIES, "c", [], family="nope")


@pytest.mark.parametrize(("seed", "index"), [(-1, 0), (2**63, 0), (0, -1), (0, 2**31)])
def test_seed_and_index_out_of_range_are_refused(seed: int, index: int) -> None:
    with pytest.raises(GenerationError, match=r"out of range; use a whole number 0\.\."):
        generate(FAMILIES.require("request-rounding"), seed, index)
