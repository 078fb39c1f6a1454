"""The metrics registry and its Prometheus text rendering (pure)."""

from __future__ import annotations

import pytest

from bot.metrics import MetricsRegistry


def test_counters_and_gauges_render_with_help_type_and_escaped_labels() -> None:
    r = MetricsRegistry(process=False)
    c = r.counter("x_total", "Things\ncounted", ("kind",))
    g = r.gauge("y_seconds", "A gauge")
    c.inc(kind='a"b')
    c.inc(2, kind="plain")
    g.set(1.5)
    g.inc(-0.5)
    assert r.render() == (
        "# HELP x_total Things\\ncounted\n"
        "# TYPE x_total counter\n"
        'x_total{kind="a\\"b"} 1.0\n'
        'x_total{kind="plain"} 2.0\n'
        "# HELP y_seconds A gauge\n"
        "# TYPE y_seconds gauge\n"
        "y_seconds 1.0\n"
    )
    assert c.value(kind="plain") == 2 and c.value(kind="never") == 0


def test_counters_refuse_to_go_down_and_labels_must_match() -> None:
    r = MetricsRegistry()
    c = r.counter("x_total", "x", ("kind",))
    with pytest.raises(ValueError, match="cannot go down"):
        c.inc(-1, kind="a")
    with pytest.raises(ValueError, match="labels"):
        c.inc(other="a")
    with pytest.raises(ValueError, match="already registered"):
        r.counter("x_total", "again")


def test_two_registries_never_share_numbers() -> None:
    a, b = MetricsRegistry(), MetricsRegistry()
    a.counter("x_total", "x").inc()
    assert b.counter("x_total", "x").value() == 0


def test_the_process_collector_reports_this_process() -> None:
    text = MetricsRegistry().render()
    assert "process_resident_memory_bytes" in text
    assert "process_resident_memory_bytes" not in MetricsRegistry(process=False).render()
