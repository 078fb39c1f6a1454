"""Ranking the replays and deciding what to recommend — or why nothing helps."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from gpu_runner.clinic._candidates import RECORDED, Candidate
from gpu_runner.clinic._program import TraceProgram
from gpu_runner.clinic._replay import ConfigRun

MiB = 1 << 20
MIN_SAVING = 2 * MiB  # one small segment: anything less is noise
MIN_SAVING_FRACTION = 0.01
LITTLE_WASTE_FRACTION = 0.05  # unallocated at peak below this share of reserved


class Finding(StrEnum):
    RECOMMEND = "recommend"
    EXCEEDS_GPU = "exceeds_gpu"  # the tensors alone need more than the GPU
    STILL_OOMS = "still_ooms"  # every setting runs out of memory
    LITTLE_WASTE = "little_waste"  # reserved is already close to allocated
    NO_GAIN = "no_gain"  # no candidate saves enough


Tried = tuple[Candidate, ConfigRun]


def rank_key(item: Tried) -> tuple[int, int, int, int]:
    """Fewer OOMs, then lower peak reserved, fewer retries, fewer changed options."""
    candidate, run = item
    return (run.ooms, run.peak_reserved, run.alloc_retries, len(candidate.changes))


def ranked(tried: Sequence[Tried]) -> list[Tried]:
    return sorted(tried, key=rank_key)


def significant(baseline: ConfigRun) -> int:
    return max(MIN_SAVING, int(baseline.peak_reserved * MIN_SAVING_FRACTION))


def improves(run: ConfigRun, baseline: ConfigRun) -> bool:
    if run.ooms != baseline.ooms:
        return run.ooms < baseline.ooms
    return baseline.peak_reserved - run.peak_reserved >= significant(baseline)


@dataclass(frozen=True, slots=True)
class Verdict:
    finding: Finding
    baseline: Tried
    chosen: Tried | None  # the recommendation; None unless RECOMMEND
    best: Tried  # the best other configuration (shown when nothing helps)
    saving: int  # baseline peak reserved - chosen (or best) peak reserved, bytes
    gpu_memory: int
    demand_peak: int

    @property
    def saving_pct(self) -> float:
        peak = self.baseline[1].peak_reserved
        return 100.0 * self.saving / peak if peak else 0.0


def decide(tried: Sequence[Tried], program: TraceProgram, gpu_memory: int) -> Verdict:
    """The simplest configuration close to the best one, if it beats the recorded run."""
    baseline = next(t for t in tried if t[0].family == RECORDED)
    others = ranked([t for t in tried if t[0].family != RECORDED])
    best = others[0] if others else baseline
    base_run = baseline[1]

    def verdict(finding: Finding, chosen: Tried | None, shown: Tried) -> Verdict:
        saving = base_run.peak_reserved - shown[1].peak_reserved
        return Verdict(finding, baseline, chosen, shown, saving, gpu_memory, program.demand_peak)

    if program.demand_peak > gpu_memory:
        return verdict(Finding.EXCEEDS_GPU, None, best)
    if best[1].ooms > 0:
        return verdict(Finding.STILL_OOMS, None, best)
    if not improves(best[1], base_run):
        waste = base_run.unallocated_at_peak
        little = waste <= LITTLE_WASTE_FRACTION * base_run.peak_reserved
        return verdict(Finding.LITTLE_WASTE if little else Finding.NO_GAIN, None, best)
    # among the configurations as good as the best (same OOMs, within the noise of its
    # peak), the one that changes fewest options
    close = [
        t
        for t in others
        if t[1].ooms == best[1].ooms
        and t[1].peak_reserved - best[1].peak_reserved < significant(base_run)
    ]
    chosen = min(close, key=lambda t: (len(t[0].changes), rank_key(t)))
    return verdict(Finding.RECOMMEND, chosen, chosen)
