"""`AckFirst`: a reply waits while a burst is being acknowledged, on an injected clock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from bot.tasks import AckFirst


class Timeline:
    """A clock that moves only when the waiter sleeps; `during` runs at chosen sleeps (an
    acknowledgement beginning while the reply waits)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []
        self.during: dict[int, Callable[[], None]] = {}

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds / 2
        if (act := self.during.get(len(self.slept))) is not None:
            act()
        self.now += seconds / 2


def acknowledge(acks: AckFirst) -> None:
    acks.enter()
    acks.leave()


def gate(timeline: Timeline, hold: float = 2.0, quiet: float = 0.05) -> AckFirst:
    return AckFirst(hold, quiet, clock=timeline.clock, sleep=timeline.sleep)


async def test_a_reply_with_no_acknowledgement_around_goes_at_once() -> None:
    timeline = Timeline()
    await gate(timeline).wait()
    assert timeline.slept == []


async def test_a_reply_waits_out_the_quiet_spell_after_the_latest_acknowledgement() -> None:
    timeline = Timeline()
    acks = gate(timeline)
    acknowledge(acks)  # nothing pending, but one began just now
    timeline.during = {1: lambda: acknowledge(acks)}
    await acks.wait()
    # A second acknowledgement began half-way through the first spell: the reply waited
    # for the spell after it, and no longer.
    assert timeline.slept == [0.05, 0.025]
    assert timeline.now == pytest.approx(0.075)


async def test_a_reply_waits_while_an_acknowledgement_is_pending() -> None:
    timeline = Timeline()
    acks = gate(timeline)
    acks.enter()
    waiter = asyncio.create_task(acks.wait())
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiter.done()
    acks.leave()
    await asyncio.wait_for(waiter, 10)
    assert timeline.slept == [0.05]  # the quiet spell after it, on the injected clock


async def test_acknowledgements_without_end_hold_a_reply_back_for_hold_seconds_at_most() -> None:
    timeline = Timeline()
    acks = gate(timeline, hold=1.0, quiet=0.25)
    acknowledge(acks)
    timeline.during = dict.fromkeys(range(1, 100), lambda: acknowledge(acks))
    await acks.wait()
    assert len(timeline.slept) > 3  # each spell was cut short by another acknowledgement
    assert timeline.now == pytest.approx(1.0) and sum(timeline.slept) == pytest.approx(1.0)
