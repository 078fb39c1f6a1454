"""Which allocator settings the clinic tries, each as changes to the recorded settings.

Every candidate keeps the recorded ``PYTORCH_CUDA_ALLOC_CONF`` and changes one family of
options: expandable segments; ``max_split_size_mb`` at values taken from the trace's own
large request sizes; ``roundup_power2_divisions``; ``garbage_collection_threshold`` with
the memory fraction it needs. After those have run, `combination` merges the families
that helped into one more candidate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpu_runner.clinic._conf import (
    EXPANDABLE,
    FRACTION,
    GC,
    MAX_SPLIT,
    ROUNDUP,
    Items,
    conf_items,
    conf_text,
    label,
    merged,
    parsed,
)
from gpu_runner.clinic._program import TraceProgram
from gpu_runner.clinic._replay import ConfigRun
from gpu_runner.sim import AllocatorConfig, AllocatorConfigError

RECORDED = "recorded"
COMBINED = "combined"
GC_FAMILY = "gc"
# of the bytes asked by requests above 1 MiB; the first three distinct usable values
MAX_SPLIT_QUANTILES = (0.5, 0.75, 0.9, 0.25)
MAX_SPLIT_VALUES = 3
GC_THRESHOLD = "0.8"
GC_FRACTION = "0.95"  # GC acts only under a memory fraction below 1


@dataclass(frozen=True, slots=True)
class Candidate:
    family: str  # recorded, expandable, max_split, roundup, gc, combined
    changes: Items  # the options changed from the recorded settings
    items: Items  # the whole configuration
    config: AllocatorConfig

    @property
    def label(self) -> str:
        return RECORDED if self.family == RECORDED else label(self.changes)

    @property
    def conf(self) -> str:
        return conf_text(self.items)


def _candidate(family: str, recorded: Items, changes: Items) -> Candidate | None:
    items = merged(recorded, changes)
    try:
        return Candidate(family, changes, items, parsed(items))
    except AllocatorConfigError:  # e.g. max_split below a recorded large_segment_size_mb
        return None


def max_split_values(program: TraceProgram, minimum_mb: int) -> list[int]:
    """A few ``max_split_size_mb`` values from the trace's large requests (byte-weighted
    quantiles), at least `minimum_mb` and below the largest request (above it, nothing
    would change)."""
    sizes = sorted(program.large_requests.items())
    total = sum(weight for _, weight in sizes)
    if not total:
        return []
    largest = sizes[-1][0]
    values: list[int] = []
    for q in MAX_SPLIT_QUANTILES:
        seen = 0
        for mib, weight in sizes:
            seen += weight
            if seen >= q * total:
                value = max(mib, minimum_mb)
                if value < largest and value not in values:
                    values.append(value)
                break
    return values[:MAX_SPLIT_VALUES]


def single_candidates(recorded_conf: str, program: TraceProgram) -> list[Candidate]:
    """The recorded settings first, then one candidate per option value tried; the
    garbage-collection candidate is last (see `same_as_without_gc`)."""
    recorded = conf_items(recorded_conf)
    base = parsed(recorded)
    out = [Candidate(RECORDED, {}, recorded, base)]
    tries: list[tuple[str, Items]] = [("expandable", {EXPANDABLE: "True"})]
    minimum = base.large_segment_size >> 20
    for value in max_split_values(program, minimum):
        tries.append(("max_split", {MAX_SPLIT: str(value)}))
    tries.append(("roundup", {ROUNDUP: "4" if recorded.get(ROUNDUP) != "4" else "8"}))
    has_fraction = base.per_process_memory_fraction < 1.0
    fraction = recorded.get(FRACTION, GC_FRACTION) if has_fraction else GC_FRACTION
    tries.append((GC_FAMILY, {GC: GC_THRESHOLD, FRACTION: fraction}))
    for family, changes in tries:
        candidate = _candidate(family, recorded, changes)
        if candidate is not None and all(candidate.config != c.config for c in out):
            out.append(candidate)
    return out


def same_as_without_gc(
    candidate: Candidate, base: ConfigRun, program: TraceProgram, total_memory: int
) -> bool:
    """True when adding the garbage-collection options to `base`'s settings cannot change
    its replay: reserved memory, even plus twice the largest request (rounding) and a
    segment, stays under the threshold of the capped memory, so neither the collection
    nor the cap ever acts. Then `base`'s figures are the candidate's, without a replay."""
    config = candidate.config
    allowed = int(config.per_process_memory_fraction * total_memory)
    bound = base.peak_reserved + 2 * program.largest_request + config.large_segment_size
    return bound <= int(config.garbage_collection_threshold * allowed)


def combination(
    tried: Sequence[tuple[Candidate, ConfigRun]], improves: Mapping[str, bool]
) -> Candidate | None:
    """The best candidate of each family that beat the recorded settings, merged; None
    with fewer than two such families (the best single one is then the best combination)
    or when it equals a configuration already tried.

    `tried` is ranked best first; `improves[family]` says whether a family helped.
    """
    best: dict[str, Candidate] = {}
    for candidate, _ in tried:
        if candidate.family not in (RECORDED, COMBINED):
            best.setdefault(candidate.family, candidate)
    chosen = [c for family, c in best.items() if improves.get(family)]
    if len(chosen) < 2:
        return None
    changes: Items = {}
    for candidate in chosen:
        changes.update(candidate.changes)
    recorded = next(c for c, _ in tried if c.family == RECORDED).items
    combined = _candidate(COMBINED, recorded, changes)
    if combined is None or any(combined.config == c.config for c, _ in tried):
        return None
    return combined
