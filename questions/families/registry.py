"""The families as a plain value, and `generate`: (family, seed, index) -> a question.

Question `index` of `seed` is scenario ``draw(space, index, "<family>:<seed>")`` of the
family's space (see `questions.families.space.draw`): the questions of one seed take the
family's variants in turn and never repeat a scenario until a variant is exhausted; each
is a pure function of (family, seed, index).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from bot.errors import UserFacingError
from questions.families.assemble import assemble
from questions.families.model import Family, GeneratedQuestion
from questions.families.space import draw

SEED_MAX: Final = 2**63 - 1
INDEX_MAX: Final = 2**31 - 1


class GenerationError(UserFacingError):
    """An unknown family, or a seed or index out of range; the message names the fix."""


@dataclass(frozen=True, slots=True)
class FamilyRegistry:
    """The known families, in listing order; built once and never changed."""

    families: tuple[Family, ...]

    def __post_init__(self) -> None:
        ids = [f.id for f in self.families]
        if len(set(ids)) != len(ids):
            raise ValueError(f"family ids must be unique: {ids}")

    def __iter__(self) -> Iterator[Family]:
        return iter(self.families)

    def __len__(self) -> int:
        return len(self.families)

    def ids(self) -> list[str]:
        return [f.id for f in self.families]

    def get(self, family_id: str) -> Family | None:
        return next((f for f in self.families if f.id == family_id), None)

    def require(self, family_id: str) -> Family:
        family = self.get(family_id)
        if family is None:
            raise GenerationError(
                f"unknown question family {family_id!r}; known families: {', '.join(self.ids())}"
            )
        return family


def default_families() -> FamilyRegistry:
    """Every shipped family (imported here so that listing them costs one import)."""
    from questions.families import (
        activations,
        autocast_cache,
        chunked_prefill,
        empty_cache,
        expandable,
        fragmentation,
        gc_threshold,
        kv_cache,
        lm_head,
        max_split,
        moe,
        non_split,
        oom_cap,
        reserved,
        rounding,
        roundup,
        training_state,
    )

    return FamilyRegistry(
        tuple(
            module.FAMILY
            for module in (
                rounding,
                reserved,
                fragmentation,
                max_split,
                expandable,
                oom_cap,
                roundup,
                empty_cache,
                gc_threshold,
                non_split,
                kv_cache,
                training_state,
                activations,
                lm_head,
                autocast_cache,
                moe,
                chunked_prefill,
            )
        )
    )


def check_seed(seed: int) -> None:
    if not 0 <= seed <= SEED_MAX:
        raise GenerationError(f"seed {seed} is out of range; use a whole number 0..{SEED_MAX}")


def check_index(index: int) -> None:
    if not 0 <= index <= INDEX_MAX:
        raise GenerationError(f"index {index} is out of range; use a whole number 0..{INDEX_MAX}")


def generate(family: Family, seed: int, index: int = 0) -> GeneratedQuestion:
    """Question `index` of `seed` in `family`, id ``gen-<family>-<seed>-<index>``."""
    check_seed(seed)
    check_index(index)
    scenario = draw(family.space, index, f"{family.id}:{seed}")
    variant, params = family.space.decode(scenario)
    draft = family.build(variant, params)
    return assemble(family, draft, seed=seed, index=index, scenario=scenario)
