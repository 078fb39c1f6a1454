"""What a demo gets (`RunContext`) and what it returns (`DemoOutput`).

A demo runs only in the executor's child process. The context tells it which locale to
write in, its validated parameters, and what the child found: torch or not, CUDA or not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.domain import Locale
from bot.errors import MissingExtraError
from gpu_runner.demos._registry import Number, ParamValue

SIMULATED_DEVICE = "simulated allocator, no GPU"
MiB = 1 << 20
GiB = 1 << 30


@dataclass(frozen=True, slots=True)
class RunContext:
    demo: str
    locale: Locale
    params: Mapping[str, ParamValue]
    simulate: bool = False  # the request asked for the simulator / CPU path
    torch: Any = None  # the torch module when importable, else None
    cuda: bool = False  # CUDA is available and not declined by `simulate`
    gpu_cap: int | None = None  # bytes this child may reserve on the GPU

    @property
    def el(self) -> bool:
        return self.locale is Locale.EL

    def tr(self, en: str, el: str) -> str:
        """The demo's own wording in the locale asked (demo text is content, like the bank)."""
        return el if self.el else en

    def int(self, name: str) -> int:
        return int(self._number(name))

    def float(self, name: str) -> float:
        return float(self._number(name))

    def json(self, name: str) -> dict[str, Any]:
        """A `JsonParam`'s checked, canonical value."""
        value = self.params[name]
        if not isinstance(value, dict):
            raise TypeError(f"parameter {name} is a number, not a JSON object")
        return value

    def _number(self, name: str) -> Number:
        value = self.params[name]
        if isinstance(value, dict):
            raise TypeError(f"parameter {name} is a JSON object, not a number")
        return value

    def require_torch(self) -> Any:
        if self.torch is None:
            raise MissingExtraError(f"the {self.demo} demo", "gpu")
        return self.torch

    @property
    def torch_version(self) -> str:
        return str(self.torch.__version__) if self.torch is not None else ""

    def device_line(self) -> str:
        """ "NVIDIA H200 · torch 2.13.0 · CUDA 13.0", "CPU · torch 2.13.0 (no GPU)", ..."""
        if self.cuda:
            t = self.torch
            return f"{t.cuda.get_device_name()} · torch {t.__version__} · CUDA {t.version.cuda}"
        if self.torch is not None:
            return f"CPU · torch {self.torch.__version__} (no GPU)"
        return "CPU, torch not installed (no GPU)"


@dataclass(frozen=True, slots=True)
class DemoOutput:
    report: str
    metrics: Mapping[str, Any] = field(default_factory=dict)
    png: bytes | None = None
    device: str = ""
    simulated: bool = False


def mib(nbytes: float, digits: int = 0) -> str:
    """``52428800 -> "50 MiB"``; `digits` decimals when asked."""
    value = nbytes / MiB
    return f"{value:.{digits}f} MiB"


def size(nbytes: int) -> str:
    """Bytes below 1 MiB, else MiB with as many decimals as needed (up to 2)."""
    if nbytes < MiB:
        return f"{nbytes:,} B"
    value = nbytes / MiB
    return f"{value:.0f} MiB" if value.is_integer() else f"{value:.2f} MiB"


def gib(nbytes: float, digits: int = 2) -> str:
    return f"{nbytes / GiB:.{digits}f} GiB"


def simulated_note(ctx: RunContext) -> str:
    return ctx.tr(
        "_Simulated: figures from a model of PyTorch's CUDA caching allocator "
        "(same rules, no GPU). Byte counts and OOM outcomes match a GPU run; "
        "timings and free device memory are n/a._",
        "_Προσομοίωση: τα νούμερα βγαίνουν από μοντέλο του caching allocator της PyTorch "
        "(ίδιοι κανόνες, χωρίς GPU). Τα bytes και τα OOM συμπίπτουν με εκτέλεση σε GPU· "
        "χρόνοι και ελεύθερη μνήμη της συσκευής: n/a._",
    )


def title_line(ctx: RunContext, en: str, el: str, simulated: bool) -> str:
    tag = ctx.tr(" · simulated", " · προσομοίωση") if simulated else ""
    return f"*{ctx.tr(en, el)}{tag}*"
