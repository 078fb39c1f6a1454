"""Interactions: a click on one of the quiz's buttons, whatever the platform.

Every adapter turns its wire payload into a `Click` (`Click.parse` reads the button id the
core wrote: ``quiz:<kind>:<post>:<value>``) and shows the returned message privately to
the clicking user. What a click means is decided here, once:

- the locale of the reply: the user's own where the platform says it, else the channel's
  (cached, so a reply can still be worded when the database is down);
- the handler of each kind: `answer` records the answer; features register theirs
  (`demo` runs the question's demonstration once, in its thread);
- the failure reply: a short private line, with repeated failures logged once per
  interval, never a traceback per click.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, replace
from typing import TypeVar

from bot.admin import NOBODY, AdminCheck, AdminStatus, admin_refusal
from bot.boundary import as_message, failure_message, guard
from bot.domain import ChannelRef, Locale, UserRef
from bot.errors import StorageUnavailable
from bot.features import ButtonKind, Registry
from bot.forms import Form, Submission, SubmitReply
from bot.i18n import N_, translator
from bot.logs import problem_key
from bot.messages import ANSWER, Button, Message
from bot.quiz import QuizService

log = logging.getLogger(__name__)

NOT_AVAILABLE = N_("This button is not available any more.")
ANSWER_NOT_RECORDED = N_(
    "Your answer could not be recorded (the quiz's database is not answering). "
    "Please click again in a moment."
)
_CHOICE = re.compile(r"[0-9]{1,2}")


@dataclass(frozen=True, slots=True)
class Click:
    """A click on a quiz button, as every platform reports it."""

    kind: str  # ANSWER, or a kind a feature registered
    post_id: int
    value: str
    user: UserRef
    channel: ChannelRef  # where the click happened (checked against the post's channel)
    user_locale: Locale | None = None
    # The platform says it delivered this click before (Slack's retries): the process that
    # took the first delivery may have died after recording it, before answering.
    redelivered: bool = False
    admin: AdminCheck = NOBODY  # asked only for a kind that is for admins

    @classmethod
    def parse(
        cls,
        custom_id: str,
        user: UserRef,
        channel: ChannelRef,
        user_locale: Locale | None = None,
        admin: AdminCheck = NOBODY,
    ) -> Click | None:
        """The click behind a button id; None when it is not shaped like one of ours (or
        out of range)."""
        decoded = Button.decode(custom_id)
        if decoded is None:
            return None
        kind, post_id, value = decoded
        return cls(kind, post_id, value, user, channel, user_locale, admin=admin)

    def again(self) -> Click:
        """The same click, marked as a redelivery."""
        return replace(self, redelivered=True)

    @property
    def choice(self) -> int:
        """An answer's choice index; -1 (refused as invalid) when the value is not one."""
        return int(self.value) if _CHOICE.fullmatch(self.value) else -1


_Event = TypeVar("_Event", Click, Submission)


class Interactions:
    """The click use case: `click(Click) -> Message` (the private reply); for kinds that
    ask for input, `open_form(Click) -> Form | Message`; and `submit(Submission)`. What
    each kind does is the registry's (`bot.features`); none of these raises."""

    def __init__(self, service: QuizService, registry: Registry) -> None:
        self.service = service
        self.registry = registry

    def knows(self, click: Click) -> bool:
        """Whether `click` is of a kind this bot handles (a platform drops others as not
        ours, without a database read)."""
        if click.kind == ANSWER:
            return True
        kind = self.registry.buttons.get(click.kind)
        return kind is not None and (click.post_id == 0) != kind.about_post

    def opens_form(self, kind: str) -> bool:
        """Whether a click on `kind` answers with a form (a platform must then answer the
        click with the form itself: Slack `views.open`, Discord response type 9)."""
        found = self.registry.buttons.get(kind)
        return found is not None and found.form is not None

    async def _locale(self, channel: ChannelRef, user_locale: Locale | None) -> Locale:
        return await self.service.locale_for(channel, user_locale)

    async def _refusal(self, event: _Event, admin: str, locale: Locale) -> Message | None:
        """Why an admin-only kind did not run for this user; None when it may."""
        if not admin:
            return None
        status = await event.admin()
        if status is AdminStatus.YES:
            return None
        return Message(body=admin_refusal(event.user.platform, admin, status, translator(locale)))

    def _kind(self, click: Click) -> ButtonKind | None:
        return self.registry.buttons.get(click.kind) if self.knows(click) else None

    async def open_form(self, click: Click) -> Form | Message:
        locale = await self._locale(click.channel, click.user_locale)
        kind = self._kind(click)
        if kind is None or kind.form is None:
            return Message(body=translator(locale)(NOT_AVAILABLE))
        opener = kind.form

        async def opened() -> Form | Message:
            refused = await self._refusal(click, kind.admin, locale)
            return refused if refused is not None else await opener(click, locale)

        return await guard(
            self.service.problems, f"form {click.kind}", locale, opened(), _form_or_message
        )

    async def submit(self, submission: Submission) -> SubmitReply:
        locale = await self._locale(submission.channel, submission.user_locale)
        kind = self.registry.forms.get(submission.kind)
        if kind is None:
            return SubmitReply(Message(body=translator(locale)(NOT_AVAILABLE)))

        async def submitted() -> SubmitReply:
            refused = await self._refusal(submission, kind.admin, locale)
            return (
                SubmitReply(refused)
                if refused is not None
                else await kind.submit(submission, locale)
            )

        return await guard(
            self.service.problems, f"submit {submission.kind}", locale, submitted(), SubmitReply
        )

    async def click(self, click: Click) -> Message:
        if click.kind == ANSWER:
            # The hot path: the outcome speaks the user's or the post's language; the
            # channel's (a database read) is looked up only when something fails.
            return await self._answer(click)
        locale = await self._locale(click.channel, click.user_locale)
        kind = self._kind(click)
        if kind is None or kind.click is None:
            return Message(body=translator(locale)(NOT_AVAILABLE))
        handler = kind.click

        async def clicked() -> Message:
            refused = await self._refusal(click, kind.admin, locale)
            return refused if refused is not None else await handler(click, locale)

        return await guard(
            self.service.problems, f"click {click.kind}", locale, clicked(), as_message
        )

    async def _answer(self, click: Click) -> Message:
        started = time.monotonic()
        try:
            reply = await self.service.record_answer(
                click.post_id,
                click.user,
                click.choice,
                click.user_locale,
                channel=click.channel,
                redelivered=click.redelivered,
            )
        except StorageUnavailable as exc:
            self.service.metrics.answers.inc(status="not_recorded")
            self.service.problems.problem(
                problem_key("answer", exc), "an answer was not recorded: %s", exc
            )
            locale = await self._locale(click.channel, click.user_locale)
            return Message(body=translator(locale)(ANSWER_NOT_RECORDED))
        except Exception as exc:
            locale = await self._locale(click.channel, click.user_locale)
            self.service.problems.problem(
                problem_key("click answer", exc),
                "a click on post %s failed",
                click.post_id,
                exc=exc,
            )
            return failure_message(locale, exc)
        self.service.metrics.click_seconds.observe(time.monotonic() - started)
        return reply.message


def _form_or_message(message: Message) -> Form | Message:
    return message


__all__ = ["NOT_AVAILABLE", "Click", "Interactions"]
