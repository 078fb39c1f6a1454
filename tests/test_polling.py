"""The one way tests wait: `tests.polling.eventually` (and its blocking twin)."""

from __future__ import annotations

import asyncio

import pytest

from tests.polling import eventually, eventually_sync


async def test_returns_the_first_true_value_of_a_plain_or_async_check() -> None:
    seen: list[int] = []

    def grows() -> list[int]:
        seen.append(len(seen))
        return seen if len(seen) >= 3 else []

    assert await eventually(grows, interval=0) == [0, 1, 2]

    async def later() -> str:
        await asyncio.sleep(0)
        return "ready" if len(seen) >= 5 else ""

    async def feed() -> None:
        while len(seen) < 5:
            seen.append(0)
            await asyncio.sleep(0)

    task = asyncio.create_task(feed())
    assert await eventually(later, interval=0) == "ready"
    await task


async def test_past_the_deadline_it_names_what_did_not_become_true() -> None:
    items: list[str] = []
    with pytest.raises(AssertionError, match=r"after 0.05 s waiting for lambda: len\(items\) > 2"):
        await eventually(lambda: len(items) > 2, timeout=0.05)
    with pytest.raises(AssertionError, match=r"waiting for the reply; calls: \['ping'\]$"):
        await eventually(
            lambda: False, timeout=0.05, what="the reply", detail=lambda: "calls: ['ping']"
        )

    def named() -> bool:
        return False

    with pytest.raises(AssertionError, match=r"waiting for .*named$"):
        eventually_sync(named, timeout=0.05)


async def test_an_error_inside_the_check_ends_the_wait_at_once() -> None:
    def broken() -> bool:
        raise RuntimeError("serve exited")

    with pytest.raises(RuntimeError, match="serve exited"):
        await eventually(broken, timeout=60)


async def test_a_notified_condition_reruns_the_check_without_waiting_the_interval() -> None:
    changed = asyncio.Condition()
    calls: list[str] = []

    async def record() -> None:
        await asyncio.sleep(0)
        calls.append("POST")
        async with changed:
            changed.notify_all()

    task = asyncio.create_task(record())
    # With a one-minute interval only the notification can end this within the bound.
    async with asyncio.timeout(10):
        await eventually(lambda: calls, interval=60, timeout=60, wake=changed)
    await task


def test_the_blocking_twin_polls_until_true() -> None:
    left = [3]

    def countdown() -> bool:
        left[0] -= 1
        return left[0] == 0

    assert eventually_sync(countdown, interval=0) is True
    assert left == [0]
