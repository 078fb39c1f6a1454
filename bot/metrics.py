"""The bot's metrics, on `prometheus_client` with a registry of its own.

Each `MetricsRegistry` wraps its own `CollectorRegistry` (never the library's global
default), so tests and several bots in one process never share numbers; it also carries
the process collector (CPU, memory, open files). The small `Counter`/`Gauge`/`Histogram`
wrappers keep call sites short (``metrics.answers.inc(status="recorded")``) and let tests
read a value back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import prometheus_client as prom
from prometheus_client.registry import CollectorRegistry

CONTENT_TYPE = prom.CONTENT_TYPE_LATEST


class _Metric:
    def __init__(self, metric: Any, name: str, labelnames: tuple[str, ...]) -> None:
        self._metric = metric
        self.name = name
        self.labelnames = labelnames
        # A label set's child, found again without `labels()`'s checks and lock (a click
        # counts itself once or twice on the acknowledgement's path).
        self._children: dict[tuple[str | None, ...], Any] = {}

    def _child(self, labels: dict[str, str]) -> Any:
        if not labels and not self.labelnames:
            return self._metric
        key = tuple(labels.get(name) for name in self.labelnames)
        if len(labels) == len(self.labelnames) and (child := self._children.get(key)) is not None:
            return child
        if set(labels) != set(self.labelnames):
            raise ValueError(
                f"{self.name} takes the labels {self.labelnames}, got {tuple(sorted(labels))}"
            )
        child = self._children[key] = self._metric.labels(**labels)
        return child

    def value(self, **labels: str) -> float:
        """The current value (0 for a label set never touched)."""
        if set(labels) != set(self.labelnames):
            raise ValueError(f"{self.name} takes the labels {self.labelnames}")
        for family in self._metric.collect():
            for sample in family.samples:
                if sample.name in (self.name, f"{self.name}_total") and sample.labels == labels:
                    return float(sample.value)
        return 0.0


class Counter(_Metric):
    """A value that only goes up."""

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        if amount < 0:
            raise ValueError(f"{self.name}: a counter cannot go down (inc by {amount})")
        self._child(labels).inc(amount)


class Gauge(_Metric):
    """A value that goes up and down, or is read when scraped (`track`)."""

    def set(self, value: float, **labels: str) -> None:
        self._child(labels).set(value)

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        self._child(labels).inc(amount)

    def track(self, read: Callable[[], float]) -> None:
        """Read the value from `read` at each scrape (queue depths)."""
        self._metric.set_function(read)


class Histogram(_Metric):
    def observe(self, value: float, **labels: str) -> None:
        self._child(labels).observe(value)


class MetricsRegistry:
    """Named metrics, rendered together for ``/metrics``."""

    def __init__(self, *, process: bool = True) -> None:
        # The `*_created` series (a timestamp per counter) only double the exposition; the
        # switch is the library's documented, process-wide one.
        prom.disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = CollectorRegistry(auto_describe=True)
        self._names: set[str] = set()
        if process:
            prom.ProcessCollector(registry=self.registry)

    def _check(self, name: str) -> None:
        if name in self._names:
            raise ValueError(f"metric {name} is already registered")
        self._names.add(name)

    def counter(self, name: str, help: str, labelnames: tuple[str, ...] = ()) -> Counter:
        self._check(name)
        return Counter(
            prom.Counter(name, help, labelnames, registry=self.registry), name, labelnames
        )

    def gauge(self, name: str, help: str, labelnames: tuple[str, ...] = ()) -> Gauge:
        self._check(name)
        return Gauge(prom.Gauge(name, help, labelnames, registry=self.registry), name, labelnames)

    def histogram(
        self,
        name: str,
        help: str,
        labelnames: tuple[str, ...] = (),
        buckets: Sequence[float] = prom.Histogram.DEFAULT_BUCKETS,
    ) -> Histogram:
        self._check(name)
        metric = prom.Histogram(name, help, labelnames, registry=self.registry, buckets=buckets)
        return Histogram(metric, name, labelnames)

    def render(self) -> str:
        """The Prometheus text exposition format."""
        return prom.generate_latest(self.registry).decode()


class QuizMetrics:
    """The bot's series. Built on a registry the web server renders; with no registry given
    it keeps its own (counting still works, nothing is exposed)."""

    def __init__(self, registry: MetricsRegistry | None = None) -> None:
        self.registry = registry or MetricsRegistry(process=False)
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
        self.platform_errors = r.counter(
            "quizbot_platform_errors_total",
            "Chat platform API calls that failed, by platform, method and HTTP status",
            ("platform", "method", "status"),
        )
        self.db_retries = r.counter(
            "quizbot_db_retries_total",
            "Database work tried again after a transient error, by reason "
            "(deadlock, serialization, connection, locked)",
            ("reason",),
        )
        self.db_errors = r.counter(
            "quizbot_db_errors_total",
            "Database work that failed after its retries, by operation",
            ("operation",),
        )
        self.dropped_payloads = r.counter(
            "quizbot_dropped_payloads_total",
            "Platform requests dropped as malformed or not ours, by platform and kind",
            ("platform", "kind"),
        )
        self.http_aborted_bodies = r.counter(
            "quizbot_http_aborted_bodies_total",
            "HTTP request bodies not received whole, by reason (deadline: too slow; "
            "disconnected: the client closed the connection mid-body)",
            ("reason",),
        )
        self.redeliveries = r.counter(
            "quizbot_redeliveries_total",
            "Platform requests recognised as redeliveries and not handled twice, by platform",
            ("platform",),
        )
        self.answers_waiting = r.gauge(
            "quizbot_answers_waiting", "Answer clicks queued or being committed"
        )
        self.click_seconds = r.histogram(
            "quizbot_click_seconds",
            "Seconds from receiving an answer click to its recorded outcome",
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
        )

    # The store's retry loop reports here (storage.faults.RetryObserver).
    def retried(self, reason: str) -> None:
        self.db_retries.inc(reason=reason)

    def failed(self, operation: str) -> None:
        self.db_errors.inc(operation=operation)


__all__ = ["CONTENT_TYPE", "Counter", "Gauge", "Histogram", "MetricsRegistry", "QuizMetrics"]
