"""The clinic's words: the finding, the table, the line to copy, caveats (en, el).

Like the demos' reports, the text is written here, in the runner, in the member's locale
(Greek per the content guide's glossary; option names and API calls stay in English).
Everything fits one Slack section (3,000 characters) and a Discord embed description.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.domain import Locale
from gpu_runner.clinic._conf import EXPANDABLE, FRACTION, GC, MAX_SPLIT, ROUNDUP
from gpu_runner.clinic._verdict import Finding, Tried, Verdict, significant

MiB = 1 << 20
GiB = 1 << 30
MAX_TEXT = 3000
LABEL_WIDTH = 24


@dataclass(frozen=True, slots=True)
class Words:
    locale: Locale

    @property
    def el(self) -> bool:
        return self.locale is Locale.EL

    def __call__(self, en: str, el: str) -> str:
        return el if self.el else en

    def num(self, n: int) -> str:
        text = f"{n:,}"
        return text.replace(",", ".") if self.el else text

    def dec(self, x: float, digits: int = 2) -> str:
        text = f"{x:.{digits}f}"
        return text.replace(".", ",") if self.el else text

    def mib(self, nbytes: int) -> str:
        return f"{self.num(round(nbytes / MiB))} MiB"

    def gib(self, nbytes: int) -> str:
        """GiB with one decimal; MiB below 4 GiB, where a decimal of GiB is too coarse."""
        if nbytes < 4 * GiB:
            return self.mib(nbytes)
        return f"{self.dec(nbytes / GiB, 1)} GiB"

    def ooms(self, n: int) -> str:
        """``1 OOM``, ``3 OOMs`` (Greek keeps the acronym unchanged)."""
        return f"{n} OOM" if n == 1 or self.el else f"{n} OOMs"


def title(v: Verdict, w: Words) -> str:
    """The finding in one line: the message's title and the PNG's."""
    base = v.baseline[1]
    if v.finding is Finding.RECOMMEND and v.chosen is not None:
        name = v.chosen[0].label
        if base.ooms == 1:
            return w(
                f"{name} removes the OOM of the recorded settings",
                f"Το {name} εξαλείφει την εξάντληση μνήμης (OOM) των καταγεγραμμένων ρυθμίσεων",
            )
        if base.ooms:
            return w(
                f"{name} removes all {base.ooms} OOMs of the recorded settings",
                f"Το {name} εξαλείφει και τις {base.ooms} εξαντλήσεις μνήμης (OOM) των "
                "καταγεγραμμένων ρυθμίσεων",
            )
        pct = w.dec(v.saving_pct, 1)
        return w(
            f"{name} saves {w.mib(v.saving)} ({pct} %) of peak reserved memory",
            f"Το {name} εξοικονομεί {w.mib(v.saving)} ({pct} %) δεσμευμένης (reserved) "
            "μνήμης στη μέγιστη τιμή",
        )
    if v.finding is Finding.EXCEEDS_GPU:
        return w(
            f"Nothing helps: the tensors alone need {w.gib(v.demand_peak)}, more than "
            f"the {w.gib(v.gpu_memory)} GPU",
            f"Καμία ρύθμιση δεν βοηθά: οι τανυστές μόνοι τους χρειάζονται "
            f"{w.gib(v.demand_peak)}, περισσότερα από τα {w.gib(v.gpu_memory)} της GPU",
        )
    if v.finding is Finding.STILL_OOMS:
        return w(
            f"Nothing helps: every setting runs out of memory on a {w.gib(v.gpu_memory)} GPU",
            f"Καμία ρύθμιση δεν βοηθά: όλες εξαντλούν τη μνήμη σε GPU {w.gib(v.gpu_memory)}",
        )
    if v.finding is Finding.LITTLE_WASTE:
        return w(
            f"Nothing to gain: reserved is within {w.mib(base.unallocated_at_peak)} of "
            "allocated at the peak",
            f"Τίποτα να κερδηθεί: η δεσμευμένη (reserved) απέχει μόλις "
            f"{w.mib(base.unallocated_at_peak)} από την κατανεμημένη (allocated) στη "
            "μέγιστη τιμή",
        )
    return w(
        f"Nothing helps: no setting lowers peak reserved memory by {w.mib(_noise(v))} or more",
        f"Καμία ρύθμιση δεν βοηθά: καμία δεν μειώνει τη μέγιστη δεσμευμένη (reserved) "
        f"μνήμη κατά {w.mib(_noise(v))} ή περισσότερο",
    )


def _noise(v: Verdict) -> int:
    return significant(v.baseline[1])


def table(tried: Sequence[Tried], chosen: Tried | None, w: Words) -> str:
    """The configurations, best first after the recorded one (figures in MiB)."""
    width = min(LABEL_WIDTH, max(len(c.label) for c, _ in tried) + 2)
    head = (
        w("setting", "ρύθμιση"),
        w("reserved", "reserved"),
        w("allocated", "allocated"),
        w("unalloc", "αδιάθ."),
        w("frag", "κατακ."),
        "OOM",
        w("retries", "επαν."),
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
    return w(
        "Peak reserved and peak allocated memory in MiB; unalloc = reserved − allocated and "
        "frag = 1 − largest free block / unalloc, both when reserved peaked; retries = "
        "allocations that had to free the cache (cudaFree + synchronise) and try again.",
        "Μέγιστη δεσμευμένη (reserved) και μέγιστη κατανεμημένη (allocated) μνήμη σε MiB· "
        "αδιάθ. = δεσμευμένη (reserved) − κατανεμημένη (allocated) και κατακ. "
        "(κατακερματισμός) = 1 − μεγαλύτερο ελεύθερο μπλοκ / αδιάθ., τη στιγμή της μέγιστης "
        "δεσμευμένης· επαν. = δεσμεύσεις που χρειάστηκε να αδειάσουν την cache (cudaFree + "
        "συγχρονισμός) και να ξαναπροσπαθήσουν.",
    )


def why_nothing(v: Verdict, w: Words) -> str:
    """One sentence on why no setting is recommended, and what to do instead."""
    best = v.best
    if v.finding is Finding.EXCEEDS_GPU:
        return w(
            f"At the peak the live tensors need {w.mib(v.demand_peak)} before any caching, "
            f"and the GPU has {w.mib(v.gpu_memory)}: no allocator setting can fit that. Lower "
            "the memory itself (smaller batch, activation checkpointing, mixed precision, "
            "sharding the optimizer state).",
            f"Στη μέγιστη τιμή οι τανυστές σε χρήση χρειάζονται {w.mib(v.demand_peak)} πριν "
            f"από κάθε προσωρινή αποθήκευση, ενώ η GPU έχει {w.mib(v.gpu_memory)}: καμία "
            "ρύθμιση του allocator δεν τα χωράει. Μειώστε την ίδια τη μνήμη (μικρότερο batch, "
            "επανυπολογισμός ενεργοποιήσεων (activation checkpointing), μικτή ακρίβεια, "
            "κατανομή της κατάστασης του βελτιστοποιητή (optimizer) σε πολλές GPU).",
        )
    if v.finding is Finding.STILL_OOMS:
        return w(
            f"The best setting, {best[0].label}, still runs out of memory "
            f"({w.ooms(best[1].ooms)}): the tensors fit, but not with the cache's rounding "
            "and fragmentation on this GPU. Lower the peak itself (smaller batch, activation "
            "checkpointing).",
            f"Η καλύτερη ρύθμιση, {best[0].label}, εξαντλεί ακόμη τη μνήμη "
            f"({w.ooms(best[1].ooms)}): οι τανυστές χωρούν, αλλά όχι μαζί με τη "
            "στρογγυλοποίηση και τον κατακερματισμό της cache σε αυτή την GPU. Μειώστε την "
            "ίδια τη μέγιστη τιμή (μικρότερο batch, επανυπολογισμός ενεργοποιήσεων "
            "(activation checkpointing)).",
        )
    if v.finding is Finding.LITTLE_WASTE:
        base = v.baseline[1]
        pct = w.dec(100 * base.unallocated_at_peak / max(1, base.peak_reserved), 1)
        return w(
            f"Only {pct} % of reserved memory was unallocated at the peak: fragmentation is "
            "not what limits this job; keep the recorded settings.",
            f"Μόνο το {pct} % της δεσμευμένης (reserved) μνήμης ήταν αδιάθετο στη μέγιστη "
            "τιμή: ο κατακερματισμός δεν είναι αυτό που περιορίζει τη δουλειά· κρατήστε τις "
            "καταγεγραμμένες ρυθμίσεις.",
        )
    return w(
        f"The best setting, {best[0].label}, changes peak reserved memory by "
        f"{w.mib(-v.saving)}: within the noise, so keep the recorded settings.",
        f"Η καλύτερη ρύθμιση, {best[0].label}, αλλάζει τη μέγιστη δεσμευμένη (reserved) "
        f"μνήμη κατά {w.mib(-v.saving)}: αμελητέο, οπότε κρατήστε τις καταγεγραμμένες "
        "ρυθμίσεις.",
    )


def saving_line(v: Verdict, w: Words) -> str:
    assert v.chosen is not None
    base, run = v.baseline[1], v.chosen[1]
    pct = w.dec(v.saving_pct, 1)
    return w(
        f"Peak reserved {w.mib(base.peak_reserved)} → {w.mib(run.peak_reserved)}: saves "
        f"{w.mib(v.saving)} ({pct} %); OOMs {base.ooms} → {run.ooms}, alloc retries "
        f"{w.num(base.alloc_retries)} → {w.num(run.alloc_retries)}.",
        f"Μέγιστη δεσμευμένη (reserved) {w.mib(base.peak_reserved)} → "
        f"{w.mib(run.peak_reserved)}: εξοικονόμηση {w.mib(v.saving)} ({pct} %)· OOM "
        f"{base.ooms} → {run.ooms}, επαναλήψεις δέσμευσης {w.num(base.alloc_retries)} → "
        f"{w.num(run.alloc_retries)}.",
    )


def caveats(chosen: Tried, w: Words) -> list[str]:
    """What the recommended options cost, one line per option family."""
    changes = chosen[0].changes
    out = []
    if changes.get(EXPANDABLE) == "True":
        out.append(
            w(
                "expandable_segments maps memory in pages on demand (the first allocations "
                "are a little slower); CUDA IPC (sharing CUDA tensors between processes) and "
                "CUDA graph capture have had restrictions with it in some releases: check "
                "your torch version's notes.",
                "Το expandable_segments χαρτογραφεί τη μνήμη σε σελίδες κατά τη χρήση (οι "
                "πρώτες δεσμεύσεις είναι λίγο πιο αργές)· το CUDA IPC (κοινή χρήση τανυστών "
                "CUDA μεταξύ διεργασιών) και η καταγραφή CUDA graphs είχαν περιορισμούς μαζί "
                "του σε ορισμένες εκδόσεις: δείτε τις σημειώσεις της έκδοσης torch σας.",
            )
        )
    if MAX_SPLIT in changes:
        mb = changes[MAX_SPLIT]
        out.append(
            w(
                f"max_split_size_mb:{mb} never splits blocks of {mb} MiB or more: less "
                "fragmentation, but such blocks serve only requests of a similar size, so "
                "the cache misses more often (more cudaMalloc/cudaFree and alloc retries).",
                f"Το max_split_size_mb:{mb} δεν διασπά ποτέ μπλοκ των {mb} MiB ή "
                "μεγαλύτερα: λιγότερος κατακερματισμός, αλλά τέτοια μπλοκ εξυπηρετούν μόνο "
                "αιτήματα παρόμοιου μεγέθους, οπότε η cache αστοχεί συχνότερα (περισσότερα "
                "cudaMalloc/cudaFree και επαναλήψεις δέσμευσης).",
            )
        )
    if ROUNDUP in changes:
        d = changes[ROUNDUP]
        out.append(
            w(
                f"roundup_power2_divisions:{d} rounds requests up to 1/{d} steps between "
                "powers of two: cached blocks fit more requests, but a tensor may take up "
                f"to 1/{d} more memory.",
                f"Το roundup_power2_divisions:{d} στρογγυλοποιεί τα αιτήματα προς τα πάνω σε "
                f"βήματα του 1/{d} μεταξύ δυνάμεων του δύο: τα αποθηκευμένα μπλοκ ταιριάζουν "
                f"σε περισσότερα αιτήματα, αλλά ένας τανυστής μπορεί να πιάσει έως 1/{d} "
                "περισσότερη μνήμη.",
            )
        )
    if GC in changes:
        fraction = chosen[0].items.get(FRACTION, "?")
        out.append(
            w(
                f"garbage_collection_threshold acts only under a memory fraction: "
                f"per_process_memory_fraction:{fraction} caps this process below the whole "
                "GPU, and near that cap cached blocks left unused are released (cudaFree, "
                "which synchronises).",
                f"Το garbage_collection_threshold λειτουργεί μόνο με όριο μνήμης: το "
                f"per_process_memory_fraction:{fraction} περιορίζει τη διεργασία κάτω από "
                "όλη τη GPU, και κοντά σε αυτό το όριο αποδεσμεύονται όσα μπλοκ της cache "
                "μένουν αχρησιμοποίητα (cudaFree, που συγχρονίζει).",
            )
        )
    return out


def replay_limits(w: Words) -> str:
    return w(
        "A replay models PyTorch's caching allocator only: other processes, CUDA graphs' "
        "private pools and NCCL buffers are not in the trace.",
        "Η αναπαραγωγή μοντελοποιεί μόνο τον caching allocator της PyTorch: άλλες "
        "διεργασίες, τα ιδιωτικά pool των CUDA graphs και οι buffers του NCCL δεν "
        "υπάρχουν στο ίχνος.",
    )
