"""The metric wrappers: label sets counted apart, found again, and checked every time."""

from __future__ import annotations

import pytest

from bot.metrics import MetricsRegistry


def test_each_label_set_counts_on_its_own_and_a_repeat_adds_to_it() -> None:
    metrics = MetricsRegistry(process=False)
    answers = metrics.counter("quiz_test_answers_total", "answers", ("status", "platform"))
    for _ in range(3):
        answers.inc(status="recorded", platform="slack")
    answers.inc(2, platform="slack", status="recorded")  # the same set, named in another order
    answers.inc(status="closed", platform="slack")
    assert answers.value(status="recorded", platform="slack") == 5
    assert answers.value(status="closed", platform="slack") == 1
    assert 'quiz_test_answers_total{platform="slack",status="recorded"} 5.0' in metrics.render()


def test_wrong_label_names_are_refused_even_beside_a_known_set() -> None:
    metrics = MetricsRegistry(process=False)
    answers = metrics.counter("quiz_test_refused_total", "answers", ("status",))
    answers.inc(status="recorded")
    with pytest.raises(ValueError, match="takes the labels"):
        answers.inc(state="recorded")  # as many labels, another name
    with pytest.raises(ValueError, match="takes the labels"):
        answers.inc()
    with pytest.raises(ValueError, match="takes the labels"):
        answers.inc(status="recorded", extra="x")
    assert answers.value(status="recorded") == 1
