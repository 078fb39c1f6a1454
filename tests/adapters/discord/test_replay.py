"""Acknowledged means durable: a command acknowledged (deferred) by a process that died
before running it is run by the next one, and its "thinking…" line is answered."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from bot.clock import FakeClock
from bot.commands import Command, Invocation, Reply
from bot.features import Feature, Parts
from bot.quiz import QuizService
from tests.adapters.discord.conftest import QuizWith, Runner, both_modes
from tests.adapters.discord.fake_discord import EPHEMERAL, FakeDiscord


@both_modes
async def test_a_restart_replays_a_command_whose_handler_died(
    fake: FakeDiscord, run_adapter: Runner, quiz_with: QuizWith, clock: FakeClock
) -> None:
    async def dies(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        await asyncio.Event().wait()  # the process is killed while this runs
        return []

    def stuck(parts: Parts) -> Feature:
        return Feature("stuck", commands=[Command("ask", dies, "ask [topic]", "")])

    async with quiz_with(stuck) as quiz, run_adapter(quiz=quiz, ack_deadline=0.0) as first:
        inter = await fake.command("ask", user_id="7601")
        await fake.until(lambda: bool(fake.callbacks(inter)))
        (deferred,) = fake.callbacks(inter)
        assert deferred.json == {"type": 5, "data": {"flags": EPHEMERAL}}
        await first.tasks.cancel()  # as `kill -9` would: nothing after this point runs
    question = rf"/channels/{fake.channel_id}/messages"
    assert fake.of("POST", question) == []

    clock.advance(timedelta(seconds=61))  # the dead handler's lease has passed
    async with run_adapter() as second:
        assert await second.path.deliveries.replay_due() == 1
        await second.idle()
        (posted,) = fake.of("POST", question)
        assert posted.json["components"]  # the question, with its buttons
        # The "thinking…" line of the original interaction is answered (a question was
        # posted publicly: the private line is removed).
        original = rf"/webhooks/{fake.app_id}/{inter['token']}/messages/@original"
        assert [c.status for c in fake.of("DELETE", original)] == [204]
        assert await second.path.deliveries.replay_due() == 0  # done, not replayed again
