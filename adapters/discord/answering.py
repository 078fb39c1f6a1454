"""How an interaction that changes something is answered: stored first, then run, then
answered inline or after a deferral.

`StoredRuns.run(interaction, work)`: the interaction is stored in the delivery log
(`bot.deliveries.Deliveries`, waiting up to `store_deadline`: a redelivery on any replica
is dropped, a crash replays it), then `work` runs with the user's private line open; its
first reply is the initial response when it comes within `ack_deadline` (a form opens as
a modal), else a private deferral that it replaces; the rest follow through the
interaction's webhook, and the delivery is marked done.

`Handled` is what every interaction gives back to its door (the gateway or the HTTP
endpoint): the initial response, and what follows it once that went out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from adapters.discord.forms import form_response
from adapters.discord.payloads import (
    Interaction,
    InteractionPayload,
    Target,
    channel_ref,
    stored,
    user_locale,
    user_ref,
)
from adapters.discord.replies import (
    DEFERRED_PRIVATE,
    PrivateLine,
    Webhook,
    current_private_line,
    reply_response,
)
from adapters.discord.rest import DiscordRest
from bot.boundary import guard
from bot.commands import Reply
from bot.deliveries import Deliveries
from bot.domain import Locale
from bot.i18n import N_, translator
from bot.logs import ThrottledLog
from bot.messages import Message
from bot.quiz import QuizService
from bot.tasks import TaskSupervisor

log = logging.getLogger(__name__)

PLATFORM = "discord"
DONE = N_("Done.")

Later = Callable[[bool], Coroutine[Any, Any, None]]
"""Run once the initial response went out (True) or could not (False)."""
Work = Callable[[], Awaitable[list[Reply]]]


@dataclass(frozen=True, slots=True)
class Handled:
    target: Target | None  # None for PING
    response: dict[str, Any] | None  # None: say nothing (a redelivery, or too late)
    later: Later | None = None


class StoredRuns:
    def __init__(
        self,
        service: QuizService,
        deliveries: Deliveries,
        rest: DiscordRest,
        tasks: TaskSupervisor,
        problems: ThrottledLog,
        *,
        ack_deadline: float,
        store_deadline: float,
    ) -> None:
        self.service = service
        self.deliveries = deliveries
        self.rest = rest
        self.tasks = tasks
        self.problems = problems
        self.ack_deadline = ack_deadline  # the reply inline, or a deferral
        self.store_deadline = store_deadline  # the database, before acknowledging

    async def run(self, interaction: Interaction, work: Work) -> Handled:
        loop = asyncio.get_running_loop()
        started = loop.time()
        begin = await self.stored(interaction)
        if begin is None:
            return Handled(interaction.target, None)
        webhook = self.webhook(interaction)
        running = self.tasks.spawn(self._replies(interaction, webhook, work), name="discord-run")
        left = max(self.ack_deadline - (loop.time() - started), 0.0)
        if not await finished(running, left):

            async def deferred(responded: bool) -> None:
                replies = await running
                if responded:
                    await webhook.say_after_deferral(replies)
                await self.finish(interaction, begin)

            return Handled(interaction.target, DEFERRED_PRIVATE, deferred)
        replies = running.result()
        locale = await self.locale(interaction.payload)
        first = replies[0] if replies else Reply(Message(body=translator(locale)(DONE)))

        async def inline(responded: bool) -> None:
            if responded:
                await webhook.follow_ups(replies[1:])
            await self.finish(interaction, begin)

        if first.form is not None:  # a command whose answer is a form to fill in
            return Handled(interaction.target, form_response(first.form, locale), inline)
        return Handled(
            interaction.target, reply_response(first.message, private=first.private), inline
        )

    async def stored(self, interaction: Interaction) -> asyncio.Task[bool] | None:
        """Store the interaction, waiting up to `store_deadline` (a slower database goes on
        in the background: better run once without a crash guarantee than not at all);
        None when it is a repeated delivery."""
        begin = self.tasks.spawn(self.begin(interaction), name="discord-store")
        if await finished(begin, self.store_deadline) and not begin.result():
            log.info("Discord: dropped a repeated delivery of interaction %s", interaction.key)
            return None
        return begin

    async def begin(self, interaction: Interaction) -> bool:
        record = {"interaction": stored(interaction.payload)}
        return await self.deliveries.begin(interaction.key, PLATFORM, record)

    async def finish(self, interaction: Interaction, begin: asyncio.Task[Any]) -> None:
        # A store that outlived the deadline must land before it is marked done, or a late
        # row would be replayed as if the work had died.
        await asyncio.wait({begin})
        await self.deliveries.finish(interaction.key)

    async def _replies(self, interaction: Interaction, webhook: Webhook, work: Work) -> list[Reply]:
        """Run `work` with the user's private line open (`DiscordChat.send_private`)."""
        payload = interaction.payload
        line = PrivateLine(user_ref(payload).user, webhook, lambda: self.locale(payload))
        current_private_line.set(line)  # this task's own context, and its children's
        replies = await guard(
            self.problems, "discord interaction", lambda: self.locale(payload), work(), _replied
        )
        return line.close() + replies  # in the order they were said

    def webhook(self, interaction: Interaction) -> Webhook:
        assert interaction.target is not None
        return Webhook(self.rest, interaction.target)

    async def locale(self, payload: InteractionPayload) -> Locale:
        """The user's own language where the quiz speaks it, else the channel's."""
        return await self.service.locale_for(channel_ref(payload), user_locale(payload))


def _replied(message: Message) -> list[Reply]:
    return [Reply(message)]


async def finished(task: asyncio.Task[Any], timeout: float) -> bool:
    """Whether `task` is done within `timeout` seconds (it goes on either way).

    One future, one timer and one callback: a burst keeps a thousand of these waiting at
    once, and `asyncio.wait` holds about seven more objects each for the collector to
    scan."""
    if task.done():
        return True
    waiter = asyncio.get_running_loop().create_future()

    def wake(_: object = None) -> None:
        if not waiter.done():
            waiter.set_result(None)

    timer = asyncio.get_running_loop().call_later(timeout, wake)
    task.add_done_callback(wake)
    try:
        await waiter
    finally:
        timer.cancel()
        task.remove_done_callback(wake)
    return task.done()


__all__ = ["DONE", "PLATFORM", "Handled", "Later", "StoredRuns", "Work", "finished"]
