"""A tiny metrics registry (counters and gauges) rendered in the Prometheus text format.

No client library: the bot exposes a handful of series on ``/metrics``. A registry is an
ordinary object handed to whoever counts (no module-level default), so tests and several
bots in one process never share numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TypeVar


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


class _Metric:
    kind = ""

    def __init__(self, name: str, help: str, labelnames: tuple[str, ...] = ()) -> None:
        self.name = name
        self.help = help
        self.labelnames = labelnames
        self._values: dict[tuple[str, ...], float] = {}
        if not labelnames:
            self._values[()] = 0.0

    def _key(self, labels: dict[str, str]) -> tuple[str, ...]:
        if set(labels) != set(self.labelnames):
            raise ValueError(
                f"{self.name} takes the labels {self.labelnames}, got {tuple(sorted(labels))}"
            )
        return tuple(str(labels[n]) for n in self.labelnames)

    def value(self, **labels: str) -> float:
        """The current value (0 for a label set never touched)."""
        return self._values.get(self._key(labels), 0.0)

    def samples(self) -> Iterator[tuple[tuple[str, ...], float]]:
        return iter(sorted(self._values.items()))

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {_escape_help(self.help)}", f"# TYPE {self.name} {self.kind}"]
        for key, value in self.samples():
            if key:
                pairs = ",".join(
                    f'{n}="{_escape_label(v)}"' for n, v in zip(self.labelnames, key, strict=True)
                )
                lines.append(f"{self.name}{{{pairs}}} {_number(value)}")
            else:
                lines.append(f"{self.name} {_number(value)}")
        return lines


class Counter(_Metric):
    """A value that only goes up."""

    kind = "counter"

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        if amount < 0:
            raise ValueError(f"{self.name}: a counter cannot go down (inc by {amount})")
        key = self._key(labels)
        self._values[key] = self._values.get(key, 0.0) + amount


class Gauge(_Metric):
    """A value that goes up and down."""

    kind = "gauge"

    def set(self, value: float, **labels: str) -> None:
        self._values[self._key(labels)] = float(value)

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        key = self._key(labels)
        self._values[key] = self._values.get(key, 0.0) + amount


M = TypeVar("M", bound=_Metric)


class MetricsRegistry:
    """Named metrics, rendered together for ``/metrics``."""

    def __init__(self) -> None:
        self._metrics: dict[str, _Metric] = {}

    def counter(self, name: str, help: str, labelnames: tuple[str, ...] = ()) -> Counter:
        return self._register(Counter(name, help, labelnames))

    def gauge(self, name: str, help: str, labelnames: tuple[str, ...] = ()) -> Gauge:
        return self._register(Gauge(name, help, labelnames))

    def _register(self, metric: M) -> M:
        if metric.name in self._metrics:
            raise ValueError(f"metric {metric.name} is already registered")
        self._metrics[metric.name] = metric
        return metric

    def render(self) -> str:
        """The Prometheus text exposition format (version 0.0.4)."""
        lines: list[str] = []
        for metric in self._metrics.values():
            lines += metric.render()
        return "\n".join(lines) + "\n"


class QuizMetrics:
    """The bot's series. Built on a registry the web server renders; with no registry given
    it keeps its own (counting still works, nothing is exposed)."""

    def __init__(self, registry: MetricsRegistry | None = None) -> None:
        self.registry = registry or MetricsRegistry()
        r = self.registry
        self.posts = r.counter(
            "quizbot_posts_total", "Questions posted to a platform, by kind", ("kind",)
        )
        self.answers = r.counter("quizbot_answers_total", "Answer clicks, by outcome", ("status",))
        self.reveals = r.counter("quizbot_reveals_total", "Posts closed and revealed")
        self.reconciler_retries = r.counter(
            "quizbot_reconciler_retries_total",
            "Claimed posts whose platform message was never stored, sent again",
        )
        self.scheduler_lag = r.gauge(
            "quizbot_scheduler_lag_seconds",
            "Seconds between a scheduled slot and its claim (the most recent slot)",
        )
        self.skipped_slots = r.counter(
            "quizbot_scheduler_skipped_slots_total",
            "Scheduled slots not posted: missed beyond the grace period, or window already over",
        )
        self.schedules = r.gauge("quizbot_schedules", "Enabled schedules loaded by this bot")
        self.demos = r.counter(
            "quizbot_demos_total",
            "Demo runs whose result was posted, by final state",
            ("state",),
        )


__all__ = ["Counter", "Gauge", "MetricsRegistry", "QuizMetrics"]
