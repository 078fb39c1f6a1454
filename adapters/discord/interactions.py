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
- Any other button (the reveal's demo button, and kinds other features register), every
  `/quiz` command and every submitted form: stored first, then run, answered inline or
  after a private deferral (`answering.StoredRuns`).
- A button whose kind opens a form (the typed answer's "Type the number…"): the form is
  the initial response (a modal, type 9: it cannot follow a deferral). Its submission
  (type 5) is answered privately with the outcome, or with the problems to fix and what
  was typed (`forms.py`).
- A command carrying a file in an option a feature registered (`/quiz clinic
  snapshot:…`): refused at once when the file cannot be taken, else a private deferral,
  then the download and the feature's work, editing that reply (`files.py`).
- Autocomplete -> the matching topics or demo ids (type 8), from the command's options.
- Anything else is `Malformed`: the caller logs it once per interval, counts it, and
  drops it (gateway) or answers 400 (HTTP). Nothing here raises for input.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from adapters.discord.answering import PLATFORM, Handled, StoredRuns, finished
from adapters.discord.files import AttachedCommands
from adapters.discord.forms import FORM_NOT_OPENED, form_response, modal_values, problems_message
from adapters.discord.payloads import (
    APPLICATION_COMMAND,
    AUTOCOMPLETE,
    MODAL_SUBMIT,
    PING,
    Interaction,
    InteractionPayload,
    Malformed,
    channel_ref,
    command_text,
    focused_option,
    is_admin,
    read_interaction,
    subcommand,
    user_locale,
    user_ref,
)
from adapters.discord.replies import (
    DEFERRED_PRIVATE,
    PONG,
    DeferredReply,
    choices_response,
    reply_response,
)
from adapters.discord.rest import DiscordRest
from adapters.discord.slash import matching, options_of
from bot.admin import AdminCheck, AdminStatus, known
from bot.commands import Invocation, Reply, run_command
from bot.domain import Delivery
from bot.features import Quiz
from bot.forms import Submission
from bot.i18n import translator
from bot.intake import FileRoute
from bot.interactions import NOT_AVAILABLE, Click
from bot.logs import ThrottledLog, problem_key
from bot.messages import ANSWER, Message
from bot.tasks import TaskSupervisor

log = logging.getLogger(__name__)

# An interaction token answers for 15 minutes: replay only what can still be answered.
REPLAY_MAX_AGE = timedelta(minutes=13)
# Storing an answer click the database was slow to record: what is left of Discord's 3 s.
LATE_STORE_DEADLINE = 0.3


class DiscordInteractions:
    def __init__(
        self,
        quiz: Quiz,
        rest: DiscordRest,
        tasks: TaskSupervisor,
        *,
        admin_role: int | None = None,
        admin_ids: Iterable[str] = (),
        ack_deadline: float = 1.0,
        store_deadline: float = 2.3,
    ) -> None:
        self.service = service = quiz.service
        self.commands = quiz.commands
        self.interactions = quiz.interactions
        self.deliveries = deliveries = quiz.deliveries
        self.tasks = tasks
        self.admin_role = str(admin_role) if admin_role is not None else None
        self.admin_ids = frozenset(admin_ids)
        self.store_deadline = store_deadline
        self.late_store_deadline = LATE_STORE_DEADLINE
        self.problems = ThrottledLog(log)
        self.runs = StoredRuns(
            service,
            deliveries,
            rest,
            tasks,
            self.problems,
            ack_deadline=ack_deadline,
            store_deadline=store_deadline,
        )
        self.files = AttachedCommands(rest, quiz.registry, self.admin)
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
            route = self.files.route_for(interaction)
            if route is not None:
                return await self._with_file(interaction, route)
            text = self._command_text(interaction)
            return await self.runs.run(interaction, lambda: self._command(interaction, text))
        if interaction.type == MODAL_SUBMIT:
            submission = _submission(interaction, self.admin(interaction.payload))
            if submission is None:
                return await self._not_ours(interaction)
            return await self.runs.run(interaction, lambda: self._submit(submission))
        return await self._click(interaction)

    def admin(self, payload: InteractionPayload) -> AdminCheck:
        """Discord says in every interaction whether its member is an admin (permissions,
        roles, or a listed id): the answer travels with the request."""
        admin = is_admin(payload, self.admin_role, self.admin_ids)
        return known(AdminStatus.YES if admin else AdminStatus.NO)

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
            interaction.custom_id,
            user_ref(payload),
            channel_ref(payload),
            user_lang,
            self.admin(payload),
        )
        if click is None or not self.interactions.knows(click):
            return await self._not_ours(interaction)
        if click.kind == ANSWER:
            return await self._answer(interaction, click)
        if self.interactions.opens_form(click.kind):
            return await self._open_form(interaction, click)

        async def run() -> list[Reply]:
            return [Reply(await self.interactions.click(click))]

        return await self.runs.run(interaction, run)

    async def _not_ours(self, interaction: Interaction) -> Handled:
        # Not one of our buttons or forms, or out of range: it never reaches the database.
        self.dropped(Malformed("foreign custom_id", interaction.custom_id[:40]))
        locale = await self.runs.locale(interaction.payload)
        return Handled(
            interaction.target, reply_response(Message(body=translator(locale)(NOT_AVAILABLE)))
        )

    async def _answer(self, interaction: Interaction, click: Click) -> Handled:
        recording = self.tasks.spawn(self.interactions.click(click), name="discord-answer")
        if await finished(recording, self.store_deadline):
            return Handled(interaction.target, reply_response(recording.result()))
        # The database is slow: acknowledge only once the click is safe from a crash.
        begin = self.tasks.spawn(self.runs.begin(interaction), name="discord-store")
        if not await finished(begin, self.late_store_deadline) or not begin.result():
            return Handled(interaction.target, None)  # Discord tells the user it failed
        webhook = self.runs.webhook(interaction)

        async def later(responded: bool) -> None:
            message = await recording
            if responded:
                await webhook.edit_original(message)
            await self.runs.finish(interaction, begin)

        return Handled(interaction.target, DEFERRED_PRIVATE, later)

    # -- forms ---------------------------------------------------------------------------

    async def _open_form(self, interaction: Interaction, click: Click) -> Handled:
        """The form is the initial response (a modal cannot follow a deferral); opening it
        changes nothing stored, so there is nothing to store first."""
        opening = self.tasks.spawn(self.interactions.open_form(click), name="discord-form")
        done = await finished(opening, self.store_deadline)
        locale = await self.runs.locale(interaction.payload)
        if not done:
            message = Message(body=translator(locale)(FORM_NOT_OPENED))
            return Handled(interaction.target, reply_response(message))
        return Handled(interaction.target, form_response(opening.result(), locale))

    async def _submit(self, submission: Submission) -> list[Reply]:
        reply = await self.interactions.submit(submission)
        if reply.errors:
            locale = await self.service.locale_for(submission.channel, submission.user_locale)
            return [Reply(problems_message(submission, reply, locale))]
        return [Reply(reply.message)] if reply.message is not None else []

    # -- a file sent with a command ------------------------------------------------------

    async def _with_file(self, interaction: Interaction, route: FileRoute) -> Handled:
        begin = await self.runs.stored(interaction)
        if begin is None:
            return Handled(interaction.target, None)
        reply = DeferredReply(self.runs.webhook(interaction))
        locale = await self.runs.locale(interaction.payload)
        take = await self.files.accept(interaction, route, locale, reply)
        if isinstance(take, Message):  # refused before any download

            async def refused(responded: bool) -> None:
                await self.runs.finish(interaction, begin)

            return Handled(interaction.target, reply_response(take), refused)

        async def taken(responded: bool) -> None:
            if responded:
                await take()
            await self.runs.finish(interaction, begin)

        return Handled(interaction.target, DEFERRED_PRIVATE, taken)

    # -- commands ------------------------------------------------------------------------

    async def _command(self, interaction: Interaction, text: str) -> list[Reply]:
        payload = interaction.payload
        inv = Invocation(
            channel_ref(payload),
            user_ref(payload),
            await self.runs.locale(payload),
            self.admin(payload),
        )
        return await run_command(self.commands, self.service, inv, text)

    def _command_text(self, interaction: Interaction) -> str:
        name, _ = subcommand(interaction.command)
        order = [o.name for o in options_of(self.commands, name)]
        return command_text(interaction.command, order)

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
        webhook = self.runs.webhook(interaction)
        payload = interaction.payload
        if interaction.type == APPLICATION_COMMAND:
            route = self.files.route_for(interaction)
            if route is None:
                text = self._command_text(interaction)
                await webhook.say_after_deferral(await self._command(interaction, text))
                return
            reply = DeferredReply(webhook)
            take = await self.files.accept(
                interaction, route, await self.runs.locale(payload), reply
            )
            if isinstance(take, Message):
                await reply.result(take)
                return
            await take()
        elif interaction.type == MODAL_SUBMIT:
            if (
                submission := _submission(interaction, self.admin(interaction.payload))
            ) is not None:
                await webhook.say_after_deferral(await self._submit(submission))
        elif (
            click := Click.parse(
                interaction.custom_id,
                user_ref(payload),
                channel_ref(payload),
                user_locale(payload),
                self.admin(payload),
            )
        ) is not None:
            # Marked as a redelivery: an answer recorded before the crash gets its outcome.
            message = await self.interactions.click(click.again())
            await webhook.say_after_deferral([Reply(message)])


def _submission(interaction: Interaction, admin: AdminCheck) -> Submission | None:
    """The core's submission behind a submitted modal; None when the form is not ours."""
    payload = interaction.payload
    return Submission.parse(
        interaction.custom_id,
        modal_values(interaction.modal),
        user_ref(payload),
        channel_ref(payload),
        user_locale(payload),
        admin,
    )


__all__ = ["PLATFORM", "DiscordInteractions", "Handled"]
