"""What a demo run is, said the same way in its report, its device line and its plot.

Four kinds: measured on a GPU, the allocator simulator, real torch on the CPU, and
arithmetic alone (torch not installed). Each has a device line that names the torch it
ran with (or whose rules it follows), a tag for the report's title, and a closing note;
the PNG carries the device line and a short note in its footer.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from bot.domain import Locale
from gpu_runner.sim._provenance import GPU_CHECK, RULES_TORCH, GpuCheck

SIMULATED_DEVICE = f"simulated allocator (torch {RULES_TORCH} rules)"
NO_TORCH_DEVICE = "arithmetic only, no GPU (torch not installed)"


class RunKind(StrEnum):
    GPU = "gpu"  # measured on a CUDA device
    SIMULATED = "simulated"  # gpu_runner.sim, a model of CUDACachingAllocator
    CPU = "cpu"  # real torch on the CPU; nothing simulated, nothing GPU-specific measured
    ARITHMETIC = "arithmetic"  # formulas only (torch not installed)


@dataclass(frozen=True, slots=True)
class RunLabel:
    kind: RunKind
    device: str  # "NVIDIA H200 · torch 2.13.0 · CUDA 13.0", SIMULATED_DEVICE, "CPU · torch …"
    tag: str  # appended to the report's title: "" on a GPU, " · simulated", " · CPU", …
    note: str  # the report's closing italic line ("" on a GPU)
    plot_note: str  # the PNG footer's second line ("" on a GPU)

    @property
    def simulated(self) -> bool:
        return self.kind is RunKind.SIMULATED


def _tr(locale: Locale, en: str, el: str) -> str:
    return el if locale is Locale.EL else en


def gpu_check_clause(locale: Locale, check: GpuCheck | None = GPU_CHECK) -> str:
    """ "not yet checked on a GPU", or where and with which torch they were checked."""
    if check is None:
        return _tr(locale, "not yet checked on a GPU", "δεν έχουν ελεγχθεί ακόμη σε GPU")
    return _tr(
        locale,
        f"checked on {check.gpu} with torch {check.torch} ({check.date})",
        f"ελέγχθηκαν σε {check.gpu} με torch {check.torch} ({check.date})",
    )


def simulated_label(
    locale: Locale, cpu_torch: str = "", check: GpuCheck | None = GPU_CHECK
) -> RunLabel:
    """The simulator's label; `cpu_torch` names the torch of a CPU check the demo also ran."""
    device = SIMULATED_DEVICE + (f" · CPU check: torch {cpu_torch}" if cpu_torch else "")
    clause = gpu_check_clause(locale, check)
    note = _tr(
        locale,
        f"_Simulated: the figures follow CUDACachingAllocator's rules (torch {RULES_TORCH}); "
        f"{clause}. Timings: n/a. Free device memory is that of a simulated device with "
        "nothing else on it._",
        f"_Προσομοίωση: τα νούμερα ακολουθούν τους κανόνες του CUDACachingAllocator (torch "
        f"{RULES_TORCH})· {clause}. Χρόνοι: n/a. Η ελεύθερη μνήμη είναι μιας προσομοιωμένης "
        "συσκευής χωρίς τίποτε άλλο πάνω της._",
    )
    plot_note = _tr(
        locale,
        f"simulated: follows CUDACachingAllocator's rules; {clause}",
        f"προσομοίωση: κανόνες του CUDACachingAllocator· {clause}",
    )
    return RunLabel(
        RunKind.SIMULATED,
        device,
        _tr(locale, " · simulated", " · προσομοίωση"),
        note,
        plot_note,
    )


def gpu_label(device: str) -> RunLabel:
    return RunLabel(RunKind.GPU, device, "", "", "")


def cpu_label(locale: Locale, device: str, what: str = "", gpu_unused: bool = False) -> RunLabel:
    """A real CPU run; `what` says what was (or was not) measured, in the locale.
    `gpu_unused`: there is a GPU, but what the demo measures lives on the host."""
    note = what or _tr(
        locale,
        "no GPU here: torch ran on the CPU; GPU timings and allocator figures n/a",
        "χωρίς GPU: το torch έτρεξε στη CPU· χρόνοι GPU και νούμερα του allocator: n/a",
    )
    tag = (
        _tr(locale, " · CPU, GPU unused", " · CPU, η GPU δεν χρησιμοποιείται")
        if gpu_unused
        else _tr(locale, " · CPU, no GPU", " · CPU, χωρίς GPU")
    )
    return RunLabel(
        RunKind.CPU,
        device,
        tag,
        f"_{_tr(locale, 'CPU run', 'Εκτέλεση στη CPU')}: {note}._",
        _tr(locale, "CPU run · ", "εκτέλεση στη CPU · ") + note,
    )


def arithmetic_label(locale: Locale) -> RunLabel:
    note = _tr(
        locale,
        "computed from formulas; nothing measured (needs torch: pip install 'quizbot[gpu]')",
        "υπολογισμός από τύπους· καμία μέτρηση (χρειάζεται torch: pip install 'quizbot[gpu]')",
    )
    return RunLabel(
        RunKind.ARITHMETIC,
        NO_TORCH_DEVICE,
        _tr(locale, " · arithmetic, no GPU", " · υπολογισμός, χωρίς GPU"),
        f"_{note[0].upper()}{note[1:]}._",
        note,
    )
