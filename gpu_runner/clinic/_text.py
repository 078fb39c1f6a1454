"""The clinic's words: the finding, the table, the line to copy, caveats.

Like the demos' reports, the text is written here, in the runner, in the member's locale
through the catalogs (``bot/locale/el/LC_MESSAGES/clinic_report.po``; Greek per the content
guide's glossary; option names and API calls stay in English).
Everything fits one Slack section (3,000 characters) and a Discord embed description.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot import formats
from bot.domain import Locale
from bot.i18n import Translator, translator
from gpu_runner.clinic._conf import EXPANDABLE, FRACTION, GC, MAX_SPLIT, ROUNDUP
from gpu_runner.clinic._verdict import Finding, Tried, Verdict, significant

MiB = formats.MiB
GiB = formats.GiB
MAX_TEXT = 3000
LABEL_WIDTH = 24


@dataclass(frozen=True, slots=True)
class Words:
    """The member's locale: its catalogs (`t`) and its number formats (`bot.formats`)."""

    locale: Locale

    @property
    def t(self) -> Translator:
        return translator(self.locale)

    def num(self, n: int) -> str:
        return formats.number(n, self.locale)

    def dec(self, x: float, digits: int = 2) -> str:
        return formats.number(x, self.locale, digits)

    def mib(self, nbytes: int) -> str:
        return formats.size(nbytes, self.locale, unit=formats.MIB, digits=0)

    def gib(self, nbytes: int) -> str:
        """GiB with one decimal; MiB below 4 GiB, where a decimal of GiB is too coarse."""
        if nbytes < 4 * GiB:
            return self.mib(nbytes)
        return formats.size(nbytes, self.locale, unit=formats.GIB, digits=1)

    def ooms(self, n: int) -> str:
        """``1 OOM``, ``3 OOMs`` (Greek keeps the acronym unchanged)."""
        return self.t.n("{count} OOM", "{count} OOMs", n)


def title(v: Verdict, w: Words) -> str:
    """The finding in one line: the message's title and the PNG's."""
    base = v.baseline[1]
    if v.finding is Finding.RECOMMEND and v.chosen is not None:
        name = v.chosen[0].label
        if base.ooms == 1:
            return w.t(
                "{name} removes the OOM of the recorded settings",
                name=name,
            )
        if base.ooms:
            return w.t(
                "{name} removes all {ooms} OOMs of the recorded settings",
                name=name,
                ooms=base.ooms,
            )
        pct = w.dec(v.saving_pct, 1) + " %"
        return w.t(
            "{name} saves {saving} ({pct}) of peak reserved memory",
            name=name,
            saving=w.mib(v.saving),
            pct=pct,
        )
    if v.finding is Finding.EXCEEDS_GPU:
        return w.t(
            "Nothing helps: the tensors alone need {demand_peak}, more than the {gpu_memory} GPU",
            demand_peak=w.gib(v.demand_peak),
            gpu_memory=w.gib(v.gpu_memory),
        )
    if v.finding is Finding.STILL_OOMS:
        return w.t(
            "Nothing helps: every setting runs out of memory on a {gpu_memory} GPU",
            gpu_memory=w.gib(v.gpu_memory),
        )
    if v.finding is Finding.LITTLE_WASTE:
        return w.t(
            "Nothing to gain: reserved is within {unallocated_at_peak} of allocated at the peak",
            unallocated_at_peak=w.mib(base.unallocated_at_peak),
        )
    return w.t(
        "Nothing helps: no setting lowers peak reserved memory by {noise} or more",
        noise=w.mib(_noise(v)),
    )


def _noise(v: Verdict) -> int:
    return significant(v.baseline[1])


def table(tried: Sequence[Tried], chosen: Tried | None, w: Words) -> str:
    """The configurations, best first after the recorded one (figures in MiB)."""
    width = min(LABEL_WIDTH, max(len(c.label) for c, _ in tried) + 2)
    # Short headers in their own context: "reserved" and "allocated" stay English in Greek.
    head = (
        w.t.pgettext("clinic table column", "setting"),
        w.t.pgettext("clinic table column", "reserved"),
        w.t.pgettext("clinic table column", "allocated"),
        w.t.pgettext("clinic table column", "unalloc"),
        w.t.pgettext("clinic table column", "frag"),
        "OOM",
        w.t.pgettext("clinic table column", "retries"),
    )
    cols = (10, 10, 9, 7, 5, 8)
    lines = [
        head[0].ljust(width) + "".join(h.rjust(n) for h, n in zip(head[1:], cols, strict=True))
    ]
    for candidate, run in tried:
        mark = "* " if chosen is not None and candidate is chosen[0] else "  "
        name = candidate.label
        room = width - 2
        if len(name) > room:
            name = name[: room - 1] + "…"
        cells = (
            w.num(round(run.peak_reserved / MiB)),
            w.num(round(run.peak_allocated / MiB)),
            w.num(round(run.unallocated_at_peak / MiB)),
            w.dec(run.fragmentation_at_peak),
            str(run.ooms),
            w.num(run.alloc_retries),
        )
        lines.append(
            (mark + name).ljust(width)
            + "".join(c.rjust(n) for c, n in zip(cells, cols, strict=True))
        )
    return "\n".join(lines)


def legend(w: Words) -> str:
    return w.t(
        "Peak reserved and peak allocated memory in MiB; unalloc = reserved − "
        "allocated and frag = 1 − largest free block / unalloc, both when "
        "reserved peaked; retries = allocations that had to free the cache "
        "(cudaFree + synchronise) and try again."
    )


def why_nothing(v: Verdict, w: Words) -> str:
    """One sentence on why no setting is recommended, and what to do instead."""
    best = v.best
    if v.finding is Finding.EXCEEDS_GPU:
        return w.t(
            "At the peak the live tensors need {demand_peak} before any caching, and "
            "the GPU has {gpu_memory}: no allocator setting can fit that. Lower the "
            "memory itself (smaller batch, activation checkpointing, mixed "
            "precision, sharding the optimizer state).",
            demand_peak=w.mib(v.demand_peak),
            gpu_memory=w.mib(v.gpu_memory),
        )
    if v.finding is Finding.STILL_OOMS:
        return w.t(
            "The best setting, {label}, still runs out of memory ({ooms}): the "
            "tensors fit, but not with the cache's rounding and fragmentation on "
            "this GPU. Lower the peak itself (smaller batch, activation "
            "checkpointing).",
            label=best[0].label,
            ooms=w.ooms(best[1].ooms),
        )
    if v.finding is Finding.LITTLE_WASTE:
        base = v.baseline[1]
        pct = w.dec(100 * base.unallocated_at_peak / max(1, base.peak_reserved), 1) + " %"
        return w.t(
            "Only {pct} of reserved memory was unallocated at the peak: "
            "fragmentation is not what limits this job; keep the recorded settings.",
            pct=pct,
        )
    return w.t(
        "The best setting, {label}, changes peak reserved memory by {mib}: "
        "within the noise, so keep the recorded settings.",
        label=best[0].label,
        mib=w.mib(-v.saving),
    )


def saving_line(v: Verdict, w: Words) -> str:
    assert v.chosen is not None
    base, run = v.baseline[1], v.chosen[1]
    pct = w.dec(v.saving_pct, 1) + " %"
    return w.t(
        "Peak reserved {peak_reserved} → {peak_reserved_2}: saves {saving} "
        "({pct}); OOMs {ooms} → {ooms_2}, alloc retries {alloc_retries} → "
        "{alloc_retries_2}.",
        peak_reserved=w.mib(base.peak_reserved),
        peak_reserved_2=w.mib(run.peak_reserved),
        saving=w.mib(v.saving),
        pct=pct,
        ooms=base.ooms,
        ooms_2=run.ooms,
        alloc_retries=w.num(base.alloc_retries),
        alloc_retries_2=w.num(run.alloc_retries),
    )


def caveats(chosen: Tried, w: Words) -> list[str]:
    """What the recommended options cost, one line per option family."""
    changes = chosen[0].changes
    out = []
    if changes.get(EXPANDABLE) == "True":
        out.append(
            w.t(
                "expandable_segments maps memory in pages on demand (the first "
                "allocations are a little slower); CUDA IPC (sharing CUDA tensors "
                "between processes) and CUDA graph capture have had restrictions with it "
                "in some releases: check your torch version's notes."
            )
        )
    if MAX_SPLIT in changes:
        mb = changes[MAX_SPLIT]
        out.append(
            w.t(
                "max_split_size_mb:{mb} never splits blocks of {mb} MiB or more: less "
                "fragmentation, but such blocks serve only requests of a similar size, "
                "so the cache misses more often (more cudaMalloc/cudaFree and alloc "
                "retries).",
                mb=mb,
            )
        )
    if ROUNDUP in changes:
        d = changes[ROUNDUP]
        out.append(
            w.t(
                "roundup_power2_divisions:{d} rounds requests up to 1/{d} steps between "
                "powers of two: cached blocks fit more requests, but a tensor may take "
                "up to 1/{d} more memory.",
                d=d,
            )
        )
    if GC in changes:
        fraction = chosen[0].items.get(FRACTION, "?")
        out.append(
            w.t(
                "garbage_collection_threshold acts only under a memory fraction: "
                "per_process_memory_fraction:{fraction} caps this process below the "
                "whole GPU, and near that cap cached blocks left unused are released "
                "(cudaFree, which synchronises).",
                fraction=fraction,
            )
        )
    return out


def replay_limits(w: Words) -> str:
    return w.t(
        "A replay models PyTorch's caching allocator only: other processes, CUDA "
        "graphs' private pools and NCCL buffers are not in the trace."
    )
