"""What a demo gets (`RunContext`) and what it returns (`DemoOutput`).

A demo runs only in the executor's child process. The context tells it which locale to
write in, its validated parameters, and what the child found: torch or not, CUDA or not.
Its text goes through the catalogs (`t`: ``ctx.t("...", x=...)``, in
``bot/locale/el/LC_MESSAGES/demo_reports.po``); it formats numbers in the locale with
`bot.formats` (`num`, `size`, `mib`, `pct`; digits grouped from 10,000, so ``1024 MiB``
reads the same in both) and labels the run (`label`, `title`, `output`: see `_labels`), so
every demo says what it is the same way.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot import formats
from bot.domain import Locale
from bot.errors import MissingExtraError
from bot.i18n import Translator, translator
from gpu_runner.demos._labels import (
    SIMULATED_DEVICE,
    RunKind,
    RunLabel,
    arithmetic_label,
    cpu_label,
    gpu_label,
    no_torch_device,
    simulated_label,
)
from gpu_runner.demos._registry import Number, ParamValue

GROUP_FROM = 10_000  # digit groups from five digits on: "1024 MiB" reads the same in both


@dataclass(frozen=True, slots=True)
class RunContext:
    demo: str
    locale: Locale
    params: Mapping[str, ParamValue]
    simulate: bool = False  # the request asked for the simulator / CPU path
    torch: Any = None  # the torch module when loaded, else None
    cuda: bool = False  # CUDA is available and not declined by `simulate`
    gpu_cap: int | None = None  # bytes this child may reserve on the GPU
    # False: the figure is drawn (footer included) but not encoded; `DemoOutput.png` is
    # None. For checks of the text: PNG encoding is most of a demo's run time.
    encode_png: bool = True

    @property
    def t(self) -> Translator:
        """The catalogs in the locale asked: ``ctx.t("cap {size}", size=ctx.mib(cap))``."""
        return translator(self.locale)

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

    # -- numbers in the locale's format (bot.formats) ------------------------------------

    def num(self, value: builtins.float, digits: builtins.int = 0) -> str:
        """`15728 -> "15,728"` (Greek `15.728`); `digits` decimals; 4 digits ungrouped."""
        return formats.number(value, self.locale, digits, group_from=GROUP_FROM)

    def size(self, nbytes: builtins.float, *, exact: builtins.bool = False) -> str:
        """`512 B`, `1 KiB`, `608.07 MiB`, `1.25 GiB` (Greek: decimal comma); `exact` for
        allocator figures: `3074 MiB`, never a rounded `3 GiB`."""
        return formats.size(nbytes, self.locale, exact=exact, group_from=GROUP_FROM)

    def mib(
        self, nbytes: builtins.float, digits: builtins.int = 0, *, signed: builtins.bool = False
    ) -> str:
        """Always in MiB (figures compared side by side); `signed`: `+0 MiB`, `−1024 MiB`."""
        return formats.size(
            nbytes,
            self.locale,
            unit=formats.MIB,
            digits=digits,
            group_from=GROUP_FROM,
            signed=signed,
        )

    def gib(self, nbytes: builtins.float, digits: builtins.int = 2) -> str:
        return formats.size(
            nbytes, self.locale, unit=formats.GIB, digits=digits, group_from=GROUP_FROM
        )

    def pct(self, fraction: builtins.float, digits: builtins.int = 1) -> str:
        return formats.percent(fraction, self.locale, digits)

    # -- what this run is -------------------------------------------------------------

    def device_line(self) -> str:
        """ "NVIDIA H200 · torch 2.13.0 · CUDA 13.0", "CPU · torch 2.13.0+cpu (no GPU)", ..."""
        if self.cuda:
            t = self.torch
            return f"{t.cuda.get_device_name()} · torch {t.__version__} · CUDA {t.version.cuda}"
        if self.torch is not None:
            return self.t("CPU · torch {version} (no GPU)", version=self.torch.__version__)
        return no_torch_device(self.locale)

    def label(self, kind: RunKind, *, cpu_note: str = "", cpu_check: bool = False) -> RunLabel:
        """The run's honest label. `cpu_note` (in the locale) says what a CPU run measured;
        `cpu_check` marks a simulated run that also checked something with CPU torch."""
        if kind is RunKind.GPU:
            return gpu_label(self.device_line())
        if kind is RunKind.SIMULATED:
            return simulated_label(self.locale, self.torch_version if cpu_check else "")
        if kind is RunKind.CPU:
            return cpu_label(
                self.locale,
                self.device_line(),
                cpu_note,
                gpu_unused=self.cuda,
            )
        return arithmetic_label(self.locale)

    def torch_label(self, torch_ran: bool, cpu_note: str) -> RunLabel:
        """For a demo whose torch part ran or not: measured on the GPU, run on the CPU (what
        `cpu_note` says), or arithmetic alone (torch not installed)."""
        if not torch_ran:
            return self.label(RunKind.ARITHMETIC)
        return self.label(RunKind.GPU if self.cuda else RunKind.CPU, cpu_note=cpu_note)

    def title(self, text: str, label: RunLabel) -> str:
        """The report's bold first line (`text` in the locale), tagged with what the run is."""
        return f"*{text}{label.tag}*"

    def output(
        self,
        title: str,
        lines: Sequence[str],
        metrics: Mapping[str, Any],
        fig: Any,
        label: RunLabel,
    ) -> DemoOutput:
        """Report (`title` tagged with the label, `lines`, closed by the label's note),
        metrics, the PNG with the label in its footer (unless `encode_png` is off), the
        device line, and the figure itself: every demo ends here, so none can skip a label."""
        from gpu_runner.demos import _plot

        report = [self.title(title, label), *lines]
        if label.note:
            report.append(label.note)
        _plot.finish(fig, label)
        return DemoOutput(
            "\n".join(report),
            metrics,
            _plot.encode(fig, label) if self.encode_png else None,
            label.device,
            label.simulated,
            fig,
        )


@dataclass(frozen=True, slots=True)
class DemoOutput:
    report: str
    metrics: Mapping[str, Any] = field(default_factory=dict)
    png: bytes | None = None
    device: str = ""
    simulated: bool = False
    figure: Any = field(default=None, repr=False, compare=False)  # the drawn plot, in-process


__all__ = [
    "SIMULATED_DEVICE",
    "DemoOutput",
    "RunContext",
    "RunKind",
    "RunLabel",
]
