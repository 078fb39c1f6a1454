"""Facts single families rest on: their scenario lists hold what their comments promise."""

from __future__ import annotations

import pytest

from questions.families import default_families
from questions.families.gc_threshold import SPACE as GC_SPACE
from questions.families.gc_threshold import TEMPLATES, outcome
from questions.families.oom_growing import GROWING, growing_inputs, growing_ops, growing_sizes
from questions.families.sizes import MIB
from questions.families.trace import run_trace

FAMILIES = default_families()


@pytest.mark.parametrize("cap", [256, 1024])
def test_every_growing_shape_releases_the_cache_at_least_twice(cap: int) -> None:
    for shape in GROWING:
        sizes = growing_sizes({"shape": shape}, cap * MIB)
        run = run_trace(growing_inputs(growing_ops(sizes), "num_alloc_retries", cap * MIB))
        assert run.stats["num_alloc_retries"] >= 2, (shape, cap)
        assert run.stats["num_ooms"] == 0, (shape, cap)


def test_every_gc_case_collects_some_cached_blocks_not_all() -> None:
    for name, cap, t, units in GC_SPACE.grids[0].dims[0][1]:
        sizes = {i + 1: u * cap * MIB // 64 for i, u in enumerate(units)}
        g = outcome(sizes, TEMPLATES[name], cap * MIB, t)
        assert 0 < len(g.freed) < len(g.ages), (name, cap, t, units)
        assert g.reserved > g.threshold, (name, cap, t, units)


def test_the_gc_familys_account_is_the_simulators() -> None:
    """`build` compares its own account of the collection with the replay and raises on a
    difference; a spread of scenarios must all build."""
    family = FAMILIES.require("gc-threshold")
    for scenario in range(0, family.space.size, 17):
        family.build(*family.space.decode(scenario))


def test_max_split_and_non_split_accounts_are_the_simulators() -> None:
    for family_id in ("max-split-size", "max-non-split-rounding"):
        family = FAMILIES.require(family_id)
        for scenario in range(0, family.space.size, 7):
            family.build(*family.space.decode(scenario))
