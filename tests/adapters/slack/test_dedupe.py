"""The bounded TTL set that drops Slack's redeliveries."""

from __future__ import annotations

from adapters.slack.dedupe import RecentKeys


def test_a_key_is_seen_within_its_ttl_and_forgotten_after() -> None:
    now = [0.0]
    keys = RecentKeys(ttl=60, now=lambda: now[0])
    assert keys.seen("a") is False
    assert keys.seen("a") is True
    now[0] = 59.0
    assert keys.seen("a") is True
    now[0] = 61.0
    assert keys.seen("a") is False


def test_the_set_never_holds_more_than_its_capacity() -> None:
    keys = RecentKeys(ttl=1e9, capacity=100, now=lambda: 0.0)
    for i in range(1000):
        keys.seen(str(i))
    assert len(keys) <= 100
    assert keys.seen("999") is True and keys.seen("0") is False
