"""Every Discord interaction, from the gateway or the HTTP endpoint, goes through
`DiscordInteractions.handle`: the raw JSON in, the initial response body out (the gateway
POSTs it to the interaction callback, the HTTP endpoint returns it), with what follows it
(`Handled.later`: the deferred reply, more replies, marking the request done).

- PING (HTTP only) -> PONG.
- An answer button: the answer is recorded first (`bot.interactions.Interactions.click`,
  group-committed), then answered with the outcome (type 4, ephemeral): acknowledged means
  stored. Should the database take longer than `store_deadline`, the click is stored to
  be replayed after a crash and the answer is deferred (or, when even that does not
  happen in time, not acknowledged: Discord tells the user it failed).
- Any other button (the reveal's demo button, and kinds other features register) and
  every `/quiz` command: stored first (`bot.deliveries.Deliveries`, waiting up to
  `store_deadline`: a redelivery on any replica is dropped, a crash replays it), then
  run; the reply is the initial response when the core answers within `ack_deadline`,
  else a private deferral that it replaces.
- Autocomplete -> the matching topics or demo ids (type 8), from the command's options.
- Anything else is `Malformed`: the caller logs it once per interval, counts it, and
  drops it (gateway) or answers 400 (HTTP). Nothing here raises for input.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from adapters.discord.payloads import (
    APPLICATION_COMMAND,
    AUTOCOMPLETE,
    PING,
    Interaction,
    InteractionPayload,
    Malformed,
    Target,
    channel_ref,
    command_text,
    focused_option,
    is_admin,
    read_interaction,
    stored,
    subcommand,
    user_locale,
    user_ref,
)
from adapters.discord.replies import (
    DEFERRED_PRIVATE,
    PONG,
    PrivateLine,
    Webhook,
    choices_response,
    current_private_line,
    reply_response,
)
from adapters.discord.rest import DiscordRest
from adapters.discord.slash import matching, options_of
from bot.commands import (
    AdminStatus,
    CommandSet,
    Invocation,
    Reply,
    failure_message,
    run_command,
)
from bot.deliveries import Deliveries
from bot.domain import Delivery, Locale
from bot.i18n import N_, translator
from bot.interactions import NOT_AVAILABLE, Click, Interactions
from bot.logs import ThrottledLog, problem_key
from bot.messages import ActionKind, Message
from bot.quiz import QuizService
from bot.tasks import TaskSupervisor

log = logging.getLogger(__name__)

PLATFORM = "discord"
DONE = N_("Done.")
# An interaction token answers for 15 minutes: replay only what can still be answered.
REPLAY_MAX_AGE = timedelta(minutes=13)
# Storing an answer click the database was slow to record: what is left of Discord's 3 s.
LATE_STORE_DEADLINE = 0.3

Later = Callable[[bool], Coroutine[Any, Any, None]]
"""Run once the initial response went out (True) or could not (False)."""


@dataclass(frozen=True, slots=True)
class Handled:
    target: Target | None  # None for PING
    response: dict[str, Any] | None  # None: say nothing (a redelivery, or too late)
    later: Later | None = None


class DiscordInteractions:
    def __init__(
        self,
        service: QuizService,
        commands: CommandSet,
        interactions: Interactions,
        deliveries: Deliveries,
        rest: DiscordRest,
        tasks: TaskSupervisor,
        *,
        admin_role: int | None = None,
        admin_ids: Iterable[str] = (),
        ack_deadline: float = 1.0,
        store_deadline: float = 2.3,
    ) -> None:
        self.service = service
        self.commands = commands
        self.interactions = interactions
        self.deliveries = deliveries
        self.rest = rest
        self.tasks = tasks
        self.admin_role = str(admin_role) if admin_role is not None else None
        self.admin_ids = frozenset(admin_ids)
        self.ack_deadline = ack_deadline  # the reply inline, or a deferral
        self.store_deadline = store_deadline  # the database, before acknowledging
        self.problems = ThrottledLog(log)
        deliveries.add_replayer(PLATFORM, self.replay, REPLAY_MAX_AGE)

    async def handle(self, raw: object) -> Handled:
        """The initial response to one interaction, and what follows it."""
        interaction = read_interaction(raw)
        del raw  # only the fields read live on (see `read_interaction`)
        if interaction.type == PING:
            return Handled(None, PONG)
        if interaction.type == AUTOCOMPLETE:
            return Handled(interaction.target, self._choices(interaction))
        if interaction.type == APPLICATION_COMMAND:
            text = self._command_text(interaction)
            return await self._stored_then_run(
                interaction, lambda: self._command(interaction, text)
            )
        return await self._click(interaction)

    def dropped(self, exc: Malformed) -> None:
        """Log (once per interval) and count an interaction that was not handled."""
        self.service.metrics.dropped_payloads.inc(platform=PLATFORM, kind=exc.kind)
        self.problems.problem(
            f"discord dropped {exc.kind}", "Discord: dropped an interaction (%s)", exc
        )

    # -- buttons -----------------------------------------------------------------------

    async def _click(self, interaction: Interaction) -> Handled:
        payload = interaction.payload
        user_lang = user_locale(payload)
        click = Click.parse(
            interaction.custom_id, user_ref(payload), channel_ref(payload), user_lang
        )
        if click is None:
            # Not one of our buttons, or out of range: it never reaches the database.
            self.dropped(Malformed("foreign custom_id", interaction.custom_id[:40]))
            locale = await self.service.locale_for(channel_ref(payload), user_lang)
            message = Message(body=translator(locale)(NOT_AVAILABLE))
            return Handled(interaction.target, reply_response(message))
        if click.kind is ActionKind.ANSWER:
            return await self._answer(interaction, click)

        async def run() -> list[Reply]:
            return [Reply(await self.interactions.click(click))]

        return await self._stored_then_run(interaction, run)

    async def _answer(self, interaction: Interaction, click: Click) -> Handled:
        recording = self.tasks.spawn(self.interactions.click(click), name="discord-answer")
        if await _finished(recording, self.store_deadline):
            return Handled(interaction.target, reply_response(recording.result()))
        # The database is slow: acknowledge only once the click is safe from a crash.
        begin = self.tasks.spawn(self._begin(interaction), name="discord-store")
        if not await _finished(begin, LATE_STORE_DEADLINE) or not begin.result():
            return Handled(interaction.target, None)  # Discord tells the user it failed
        webhook = self._webhook(interaction)

        async def later(responded: bool) -> None:
            message = await recording
            if responded:
                await webhook.edit_original(message)
            await self._finish(interaction, begin)

        return Handled(interaction.target, DEFERRED_PRIVATE, later)

    # -- commands and other clicks: stored, then run -------------------------------------

    async def _stored_then_run(
        self, interaction: Interaction, work: Callable[[], Awaitable[list[Reply]]]
    ) -> Handled:
        loop = asyncio.get_running_loop()
        started = loop.time()
        # A database slower than the deadline: run it anyway (better once without a crash
        # guarantee than not at all); `begin` goes on in the background.
        begin = self.tasks.spawn(self._begin(interaction), name="discord-store")
        if await _finished(begin, self.store_deadline) and not begin.result():
            log.info("Discord: dropped a repeated delivery of interaction %s", interaction.key)
            return Handled(interaction.target, None)
        webhook = self._webhook(interaction)
        running = self.tasks.spawn(self._replies(interaction, webhook, work), name="discord-run")
        left = max(self.ack_deadline - (loop.time() - started), 0.0)
        if not await _finished(running, left):

            async def deferred(responded: bool) -> None:
                replies = await running
                if responded:
                    await webhook.say_after_deferral(replies)
                await self._finish(interaction, begin)

            return Handled(interaction.target, DEFERRED_PRIVATE, deferred)
        replies = running.result()
        first = replies[0] if replies else Reply(Message(body=await self._done(interaction)))

        async def inline(responded: bool) -> None:
            if responded:
                await webhook.follow_ups(replies[1:])
            await self._finish(interaction, begin)

        return Handled(
            interaction.target, reply_response(first.message, private=first.private), inline
        )

    async def _replies(
        self, interaction: Interaction, webhook: Webhook, work: Callable[[], Awaitable[list[Reply]]]
    ) -> list[Reply]:
        """Run `work` with the user's private line open (`DiscordChat.send_private`)."""
        line = PrivateLine(user_ref(interaction.payload).user, webhook)
        current_private_line.set(line)  # this task's own context, and its children's
        try:
            replies = await work()
        except Exception as exc:  # the core's use cases do not raise; a bug must not hang
            self.problems.problem(
                problem_key("discord interaction", exc), "an interaction failed", exc=exc
            )
            locale = await self._locale(interaction.payload)
            replies = [Reply(failure_message(locale, exc))]
        return line.close() + replies  # in the order they were said

    async def _command(self, interaction: Interaction, text: str) -> list[Reply]:
        payload = interaction.payload

        async def admin_check() -> AdminStatus:
            admin = is_admin(payload, self.admin_role, self.admin_ids)
            return AdminStatus.YES if admin else AdminStatus.NO

        inv = Invocation(
            channel_ref(payload),
            user_ref(payload),
            await self._locale(payload),
            admin_check=admin_check,
        )
        return await run_command(self.commands, self.service, inv, text)

    def _command_text(self, interaction: Interaction) -> str:
        name, _ = subcommand(interaction.command)
        order = [o.name for o in options_of(self.commands, name)]
        return command_text(interaction.command, order)

    async def _begin(self, interaction: Interaction) -> bool:
        record = {"interaction": stored(interaction.payload)}
        return await self.deliveries.begin(interaction.key, PLATFORM, record)

    async def _finish(self, interaction: Interaction, begin: asyncio.Task[Any]) -> None:
        # A store that outlived the deadline must land before it is marked done, or a late
        # row would be replayed as if the work had died.
        await asyncio.wait({begin})
        await self.deliveries.finish(interaction.key)

    # -- autocomplete --------------------------------------------------------------------

    def _choices(self, interaction: Interaction) -> dict[str, Any]:
        name, _ = subcommand(interaction.command)
        focused, typed = focused_option(interaction.command)
        option = next((o for o in options_of(self.commands, name) if o.name == focused), None)
        names: list[str] = []
        if option is not None and option.suggest is not None:
            try:
                names = list(option.suggest(self.service))
            except Exception as exc:
                self.problems.problem(
                    problem_key("autocomplete", exc), "autocomplete failed", exc=exc
                )
        return choices_response(matching(names, typed))

    # -- replay after a crash ------------------------------------------------------------

    async def replay(self, delivery: Delivery) -> None:
        """Run a stored interaction whose handler died, and answer it where the token still
        allows (after a deferral: the reply replaces "thinking…")."""
        try:
            interaction = read_interaction((delivery.payload or {}).get("interaction"))
        except Malformed as exc:
            self.dropped(exc)
            return
        webhook = self._webhook(interaction)
        if interaction.type == APPLICATION_COMMAND:
            text = self._command_text(interaction)
            await webhook.say_after_deferral(await self._command(interaction, text))
            return
        payload = interaction.payload
        click = Click.parse(
            interaction.custom_id, user_ref(payload), channel_ref(payload), user_locale(payload)
        )
        if click is not None:
            # Marked as a redelivery: an answer recorded before the crash gets its outcome.
            message = await self.interactions.click(click.again())
            await webhook.say_after_deferral([Reply(message)])

    # -- helpers -------------------------------------------------------------------------

    def _webhook(self, interaction: Interaction) -> Webhook:
        assert interaction.target is not None
        return Webhook(self.rest, interaction.target)

    async def _locale(self, payload: InteractionPayload) -> Locale:
        return await self.service.locale_for(channel_ref(payload), user_locale(payload))

    async def _done(self, interaction: Interaction) -> str:
        return translator(await self._locale(interaction.payload))(DONE)


async def _finished(task: asyncio.Task[Any], timeout: float) -> bool:
    """Whether `task` is done within `timeout` seconds (it goes on either way)."""
    if not task.done():
        await asyncio.wait({task}, timeout=timeout)
    return task.done()


__all__ = ["PLATFORM", "DiscordInteractions", "Handled"]
