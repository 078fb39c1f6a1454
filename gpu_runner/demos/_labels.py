"""What a demo run is, said the same way in its report, its device line and its plot.

Four kinds: measured on a GPU, the allocator simulator, real torch on the CPU, and
arithmetic alone (torch not installed). Each has a device line that names the torch it
ran with (or whose rules it follows), a tag for the report's title, and a closing note;
the PNG carries the device line and a short note in its footer.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from bot import formats
from bot.domain import Locale
from bot.i18n import translator
from gpu_runner.sim._provenance import GPU_CHECK, RULES_TORCH, GpuCheck

# Every simulated demo runs on one device of this size: the GPU memory a demo gets on a
# real GPU (the executor's per-demo cap) and the device of the generated questions' traces.
# Rule-determined figures do not depend on it; free memory and the OOM message do.
SIM_TOTAL_MEMORY = 16 << 30


def simulated_device(locale: Locale) -> str:
    t = translator(locale)
    return t("simulated allocator (torch {torch} rules)", torch=RULES_TORCH)


def no_torch_device(locale: Locale) -> str:
    t = translator(locale)
    return t("arithmetic only, no GPU (torch not installed)")


# The English lines, as the executor and the stored runs say them.
SIMULATED_DEVICE = simulated_device(Locale.EN)


class RunKind(StrEnum):
    GPU = "gpu"  # measured on a CUDA device
    SIMULATED = "simulated"  # gpu_runner.sim, a model of CUDACachingAllocator
    CPU = "cpu"  # real torch on the CPU; nothing simulated, nothing GPU-specific measured
    ARITHMETIC = "arithmetic"  # formulas only (torch not installed)


@dataclass(frozen=True, slots=True)
class RunLabel:
    kind: RunKind
    device: str  # "NVIDIA H200 · torch 2.13.0 · CUDA 13.0", simulated_device(), "CPU · torch …"
    tag: str  # appended to the report's title: "" on a GPU, " · simulated", " · CPU", …
    note: str  # the report's closing italic line ("" on a GPU)
    plot_note: str  # the PNG footer's second line ("" on a GPU)

    @property
    def simulated(self) -> bool:
        return self.kind is RunKind.SIMULATED


def gpu_check_clause(locale: Locale, check: GpuCheck | None = GPU_CHECK) -> str:
    """ "not yet checked on a GPU", or where and with which torch they were checked."""
    t = translator(locale)
    if check is None:
        return t("not yet checked on a GPU")
    return t(
        "checked on {gpu} with torch {torch} ({date})",
        gpu=check.gpu,
        torch=check.torch,
        date=check.date,
    )


def simulated_label(
    locale: Locale, cpu_torch: str = "", check: GpuCheck | None = GPU_CHECK
) -> RunLabel:
    """The simulator's label; `cpu_torch` names the torch of a CPU check the demo also ran."""
    t = translator(locale)
    device = simulated_device(locale)
    if cpu_torch:
        device += t(" · CPU check: torch {version}", version=cpu_torch)
    clause = gpu_check_clause(locale, check)
    note = t(
        "_Simulated: the figures follow CUDACachingAllocator's rules (torch {torch}); "
        "{clause}. Timings: n/a. The simulated device has {size} (what a demo may use on a "
        "GPU) and nothing else on it._",
        torch=RULES_TORCH,
        clause=clause,
        size=formats.size(SIM_TOTAL_MEMORY, locale),
    )
    plot_note = t(
        "simulated: follows CUDACachingAllocator's rules; {clause}",
        clause=clause,
    )
    return RunLabel(RunKind.SIMULATED, device, t(" · simulated"), note, plot_note)


def gpu_label(device: str) -> RunLabel:
    return RunLabel(RunKind.GPU, device, "", "", "")


def cpu_label(locale: Locale, device: str, what: str = "", gpu_unused: bool = False) -> RunLabel:
    """A real CPU run; `what` says what was (or was not) measured, in the locale.
    `gpu_unused`: there is a GPU, but what the demo measures lives on the host."""
    t = translator(locale)
    note = what or t("no GPU here: torch ran on the CPU; GPU timings and allocator figures n/a")
    tag = t(" · CPU, GPU unused") if gpu_unused else t(" · CPU, no GPU")
    return RunLabel(
        RunKind.CPU,
        device,
        tag,
        t("_CPU run: {note}._", note=note),
        t("CPU run · {note}", note=note),
    )


def arithmetic_label(locale: Locale) -> RunLabel:
    t = translator(locale)
    note = t("computed from formulas; nothing measured (needs torch: pip install 'quizbot[gpu]')")
    return RunLabel(
        RunKind.ARITHMETIC,
        no_torch_device(locale),
        t(" · arithmetic, no GPU"),
        f"_{note[0].upper()}{note[1:]}._",
        note,
    )
