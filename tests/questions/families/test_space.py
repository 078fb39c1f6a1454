"""Scenario spaces: one-to-one decoding, keyed permutations, balanced draws."""

from __future__ import annotations

import pytest

from questions.families.space import Space, draw, grid, permute


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 100, 1000, 4097])
def test_permute_is_a_bijection_of_the_range(size: int) -> None:
    assert sorted(permute(i, size, "k") for i in range(size)) == list(range(size))


def test_different_keys_give_different_orders() -> None:
    orders = {tuple(permute(i, 500, key) for i in range(20)) for key in ("a", "b", "c", "d")}
    assert len(orders) == 4


def test_permute_rejects_an_index_outside_the_range() -> None:
    with pytest.raises(ValueError, match=r"outside 0\.\.9"):
        permute(10, 10, "k")


def test_decode_is_one_to_one_over_every_variant() -> None:
    space = Space((grid("a", x=(1, 2, 3), y=("p", "q")), grid("b", z=range(5))))
    decoded = [space.decode(n) for n in range(space.size)]
    assert space.size == 11
    assert len({(v, tuple(sorted(p.items()))) for v, p in decoded}) == 11
    assert decoded[0] == ("a", {"x": 1, "y": "p"})
    assert decoded[-1] == ("b", {"z": 4})


def test_a_grid_needs_distinct_options() -> None:
    with pytest.raises(ValueError, match="distinct options"):
        grid("a", x=(1, 1))


def test_draws_take_variants_in_turn_and_never_repeat_before_a_variant_runs_out() -> None:
    space = Space((grid("small", x=range(4)), grid("big", y=range(1000))))
    scenarios = [draw(space, i, "seed") for i in range(8)]
    variants = [space.decode(n)[0] for n in scenarios]
    assert variants.count("small") == variants.count("big") == 4
    assert len(set(scenarios)) == 8
    # round 4 starts the small variant over, the big one keeps going
    assert len({draw(space, i, "seed") for i in range(200)}) == 4 + 100
