"""What a demo gets (`RunContext`) and what it returns (`DemoOutput`).

A demo runs only in the executor's child process. The context tells it which locale to
write in, its validated parameters, and what the child found: torch or not, CUDA or not.
It also formats numbers in the locale (`num`, `size`, `mib`, `pct`) and labels the run
(`label`, `title`, `output`: see `_labels`), so every demo says what it is the same way.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.domain import Locale
from bot.errors import MissingExtraError
from gpu_runner.demos import _units
from gpu_runner.demos._labels import (
    NO_TORCH_DEVICE,
    SIMULATED_DEVICE,
    RunKind,
    RunLabel,
    arithmetic_label,
    cpu_label,
    gpu_label,
    simulated_label,
)
from gpu_runner.demos._registry import Number, ParamValue


@dataclass(frozen=True, slots=True)
class RunContext:
    demo: str
    locale: Locale
    params: Mapping[str, ParamValue]
    simulate: bool = False  # the request asked for the simulator / CPU path
    torch: Any = None  # the torch module when loaded, else None
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

    # -- numbers in the locale's format (see _units) ------------------------------------

    def num(self, value: builtins.float, digits: builtins.int = 0) -> str:
        """`15728 -> "15,728"` (Greek `15.728`); `digits` decimals."""
        return _units.format_number(value, digits, self.locale)

    def size(self, nbytes: builtins.float, *, exact: builtins.bool = False) -> str:
        """`512 B`, `1 KiB`, `608.07 MiB`, `1.25 GiB` (Greek: decimal comma); `exact` for
        allocator figures: `3074 MiB`, never a rounded `3 GiB`."""
        return _units.format_bytes(nbytes, self.locale, exact=exact)

    def mib(self, nbytes: builtins.float, digits: builtins.int = 0) -> str:
        return _units.format_mib(nbytes, digits, self.locale)

    def gib(self, nbytes: builtins.float, digits: builtins.int = 2) -> str:
        return _units.format_gib(nbytes, digits, self.locale)

    def pct(self, fraction: builtins.float, digits: builtins.int = 1) -> str:
        return _units.format_percent(fraction, digits, self.locale)

    # -- what this run is -------------------------------------------------------------

    def device_line(self) -> str:
        """ "NVIDIA H200 · torch 2.13.0 · CUDA 13.0", "CPU · torch 2.13.0+cpu (no GPU)", ..."""
        if self.cuda:
            t = self.torch
            return f"{t.cuda.get_device_name()} · torch {t.__version__} · CUDA {t.version.cuda}"
        if self.torch is not None:
            return f"CPU · torch {self.torch.__version__} (no GPU)"
        return NO_TORCH_DEVICE

    def label(
        self, kind: RunKind, *, cpu_note: tuple[str, str] | None = None, cpu_check: bool = False
    ) -> RunLabel:
        """The run's honest label. `cpu_note` (en, el) says what a CPU run measured;
        `cpu_check` marks a simulated run that also checked something with CPU torch."""
        if kind is RunKind.GPU:
            return gpu_label(self.device_line())
        if kind is RunKind.SIMULATED:
            return simulated_label(self.locale, self.torch_version if cpu_check else "")
        if kind is RunKind.CPU:
            return cpu_label(
                self.locale,
                self.device_line(),
                self.tr(*cpu_note) if cpu_note else "",
                gpu_unused=self.cuda,
            )
        return arithmetic_label(self.locale)

    def torch_label(self, torch_ran: bool, cpu_note: tuple[str, str]) -> RunLabel:
        """For a demo whose torch part ran or not: measured on the GPU, run on the CPU (what
        `cpu_note` says), or arithmetic alone (torch not installed)."""
        if not torch_ran:
            return self.label(RunKind.ARITHMETIC)
        return self.label(RunKind.GPU if self.cuda else RunKind.CPU, cpu_note=cpu_note)

    def title(self, en: str, el: str, label: RunLabel) -> str:
        """The report's bold first line, tagged with what the run is."""
        return f"*{self.tr(en, el)}{label.tag}*"

    def output(
        self, lines: Sequence[str], metrics: Mapping[str, Any], fig: Any, label: RunLabel
    ) -> DemoOutput:
        """Report (closed by the label's note), metrics, the PNG with the label in its
        footer, and the device line: every demo ends here, so none can skip a label."""
        from gpu_runner.demos import _plot

        report = [*lines, label.note] if label.note else list(lines)
        return DemoOutput(
            "\n".join(report),
            metrics,
            _plot.to_png(fig, label),
            label.device,
            label.simulated,
        )


@dataclass(frozen=True, slots=True)
class DemoOutput:
    report: str
    metrics: Mapping[str, Any] = field(default_factory=dict)
    png: bytes | None = None
    device: str = ""
    simulated: bool = False


__all__ = [
    "SIMULATED_DEVICE",
    "DemoOutput",
    "RunContext",
    "RunKind",
    "RunLabel",
]
