"""A family's scenario space, and the keyed permutation that walks it without repeats.

A family lists its scenarios as `Grid`s: products of named option lists (one grid per
variant). `Space.decode(n)` turns a scenario number into that variant's parameters, and
is one-to-one: different numbers give different scenarios. `permute(i, size, key)` is a
bijection of ``range(size)`` chosen by `key` (a 4-round Feistel network on the next even
power of two, walked until it lands inside the range), so the `i`-th question drawn for
one key never repeats a scenario until the whole space has been drawn.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_ROUNDS = 4


@dataclass(frozen=True, slots=True)
class Grid:
    """One variant: every combination of one option from each dimension."""

    variant: str
    dims: tuple[tuple[str, tuple[Any, ...]], ...]

    def __post_init__(self) -> None:
        for name, options in self.dims:
            if not options or len(set(options)) != len(options):
                raise ValueError(f"grid {self.variant}: dimension {name} needs distinct options")

    @property
    def size(self) -> int:
        return math.prod(len(options) for _, options in self.dims)

    def decode(self, n: int) -> dict[str, Any]:
        params: dict[str, Any] = {}
        for name, options in self.dims:
            n, digit = divmod(n, len(options))
            params[name] = options[digit]
        return params


def grid(variant: str, **dims: Iterable[Any]) -> Grid:
    """`Grid` with keyword dimensions, in the order given: ``grid("a", size=(1, 2))``."""
    return Grid(variant, tuple((name, tuple(options)) for name, options in dims.items()))


@dataclass(frozen=True, slots=True)
class Space:
    grids: tuple[Grid, ...]

    @property
    def size(self) -> int:
        return sum(g.size for g in self.grids)

    def decode(self, n: int) -> tuple[str, dict[str, Any]]:
        """Scenario `n` (0 <= n < size) as (variant, parameters)."""
        if not 0 <= n < self.size:
            raise ValueError(f"scenario {n} is outside 0..{self.size - 1}")
        for g in self.grids:
            if n < g.size:
                return g.variant, g.decode(n)
            n -= g.size
        raise AssertionError("unreachable: n < size")


def draw(space: Space, index: int, key: str) -> int:
    """Scenario number of draw `index` for `key`: variants in turn, each walked by `permute`.

    Draws come in rounds of one per variant (in a `key`-and-round-chosen order), so every
    variant is asked as often however large its grid; within a variant, round `r` takes
    element `r` of that variant's own permutation, so no scenario repeats before a variant
    is exhausted (then it starts over).
    """
    grids = space.grids
    count = len(grids)
    round_, position = divmod(index, count)
    which = permute(position, count, f"{key}:round:{round_}")
    chosen = grids[which]
    within = permute(round_ % chosen.size, chosen.size, f"{key}:{chosen.variant}")
    return sum(g.size for g in grids[:which]) + within


def permute(index: int, size: int, key: str) -> int:
    """The `index`-th element (0 <= index < size) of a `key`-chosen ordering of range(size)."""
    if not 0 <= index < size:
        raise ValueError(f"index {index} is outside 0..{size - 1}")
    bits = max(2, (size - 1).bit_length())
    bits += bits % 2
    half = bits // 2
    mask = (1 << half) - 1
    prefix = hashlib.blake2b(key.encode(), digest_size=16).hexdigest()
    x = index
    while True:  # cycle walking: a permutation of 2**bits restricted to range(size)
        left, right = x >> half, x & mask
        for round_ in range(_ROUNDS):
            digest = hashlib.blake2b(f"{prefix}:{round_}:{right}".encode(), digest_size=8)
            left, right = right, left ^ (int.from_bytes(digest.digest(), "big") & mask)
        x = (left << half) | right
        if x < size:
            return x
