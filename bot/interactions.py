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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from bot.commands import AdminStatus, admin_refusal, failure_message
from bot.domain import ChannelRef, Locale, Platform, UserRef
from bot.errors import StorageUnavailable, UserFacingError
from bot.forms import Form, Submission, SubmitReply
from bot.i18n import N_, translator
from bot.logs import problem_key
from bot.messages import ActionKind, Button, Message
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

    kind: ActionKind
    post_id: int
    value: str
    user: UserRef
    channel: ChannelRef  # where the click happened (checked against the post's channel)
    user_locale: Locale | None = None
    # The platform says it delivered this click before (Slack's retries): the process that
    # took the first delivery may have died after recording it, before answering.
    redelivered: bool = False

    @classmethod
    def parse(
        cls,
        custom_id: str,
        user: UserRef,
        channel: ChannelRef,
        user_locale: Locale | None = None,
    ) -> Click | None:
        """The click behind a button id; None when it is not one of ours (or out of range)."""
        decoded = Button.decode(custom_id)
        if decoded is None:
            return None
        kind, post_id, value = decoded
        return cls(kind, post_id, value, user, channel, user_locale)

    def again(self) -> Click:
        """The same click, marked as a redelivery."""
        return replace(self, redelivered=True)

    @property
    def choice(self) -> int:
        """An answer's choice index; -1 (refused as invalid) when the value is not one."""
        return int(self.value) if _CHOICE.fullmatch(self.value) else -1


ClickHandler = Callable[[Click, Locale], Awaitable[Message]]
FormOpener = Callable[[Click, Locale], Awaitable[Form | Message]]
SubmitHandler = Callable[[Submission, Locale], Awaitable[SubmitReply]]
UserAdminCheck = Callable[[UserRef], Awaitable[AdminStatus]]
_Event = TypeVar("_Event", Click, Submission)
_R = TypeVar("_R")
"""An adapter's capability: is this user an admin of their workspace?"""


class Interactions:
    """The click use case: `click(Click) -> Message` (the private reply); for kinds that
    ask for input, `open_form(Click) -> Form | Message`; and `submit(Submission)`."""

    def __init__(self, service: QuizService) -> None:
        self.service = service
        self._handlers: dict[ActionKind, ClickHandler] = {}
        self._openers: dict[ActionKind, FormOpener] = {}
        self._submits: dict[str, SubmitHandler] = {}
        self._admin_checks: dict[Platform, UserAdminCheck] = {}

    def register(self, kind: ActionKind, handler: ClickHandler, *, admin: str = "") -> None:
        """Handle clicks on buttons of `kind` (a feature's own buttons). With `admin` (the
        command the button belongs to, for the refusal's words), only admins may press."""
        self._handlers[kind] = self._admins_only(admin, handler) if admin else handler

    def register_form(self, kind: ActionKind, opener: FormOpener, *, admin: str = "") -> None:
        """Clicks on `kind` open a form (or answer with a message, e.g. a refusal)."""
        self._openers[kind] = self._admins_only(admin, opener) if admin else opener

    def register_submit(self, kind: str, handler: SubmitHandler, *, admin: str = "") -> None:
        """Handle submissions of forms whose `Form.kind` is `kind`."""
        if admin:
            guarded = self._admins_only(admin, handler)

            async def submitted(sub: Submission, locale: Locale) -> SubmitReply:
                reply = await guarded(sub, locale)
                return reply if isinstance(reply, SubmitReply) else SubmitReply(reply)

            self._submits[kind] = submitted
        else:
            self._submits[kind] = handler

    def set_admin_check(self, platform: Platform, check: UserAdminCheck) -> None:
        """An adapter says how it tells admins (buttons and forms for admins ask it); a
        platform without one has no admins for buttons."""
        self._admin_checks[platform] = check

    async def admin_status(self, user: UserRef) -> AdminStatus:
        check = self._admin_checks.get(user.platform)
        return AdminStatus.NO if check is None else await check(user)

    def _admins_only(
        self, name: str, handler: Callable[[_Event, Locale], Awaitable[_R]]
    ) -> Callable[[_Event, Locale], Awaitable[_R | Message]]:
        async def guarded(event: _Event, locale: Locale) -> _R | Message:
            status = await self.admin_status(event.user)
            if status is not AdminStatus.YES:
                t = translator(locale)
                return Message(body=admin_refusal(event.user.platform, name, status, t))
            return await handler(event, locale)

        return guarded

    def opens_form(self, kind: ActionKind) -> bool:
        """Whether a click on `kind` answers with a form (a platform must then answer the
        click with the form itself: Slack `views.open`, Discord response type 9)."""
        return kind in self._openers

    async def open_form(self, click: Click) -> Form | Message:
        locale = await self.service.locale_for(click.channel, click.user_locale)
        opener = self._openers.get(click.kind)
        if opener is None:
            return Message(body=translator(locale)(NOT_AVAILABLE))
        return await self._guarded(
            f"form {click.kind}", click.post_id, opener(click, locale), locale
        )

    async def submit(self, submission: Submission) -> SubmitReply:
        locale = await self.service.locale_for(submission.channel, submission.user_locale)
        handler = self._submits.get(submission.kind)
        if handler is None:
            return SubmitReply(Message(body=translator(locale)(NOT_AVAILABLE)))
        try:
            return await handler(submission, locale)
        except UserFacingError as exc:
            return SubmitReply(Message(body=str(exc)))
        except Exception as exc:
            self.service.problems.problem(
                problem_key(f"submit {submission.kind}", exc),
                "a %s submission on post %s failed",
                submission.kind,
                submission.post_id,
                exc=exc,
            )
            return SubmitReply(failure_message(locale, exc))

    async def _guarded(
        self, what: str, post_id: int, work: Awaitable[Form | Message], locale: Locale
    ) -> Form | Message:
        try:
            return await work
        except UserFacingError as exc:
            return Message(body=str(exc))
        except Exception as exc:
            self.service.problems.problem(
                problem_key(what, exc), "%s on post %s failed", what, post_id, exc=exc
            )
            return failure_message(locale, exc)

    async def click(self, click: Click) -> Message:
        if click.kind is ActionKind.ANSWER:
            # The hot path: the outcome speaks the user's or the post's language; the
            # channel's (a database read) is looked up only when something fails.
            return await self._answer(click)
        locale = await self.service.locale_for(click.channel, click.user_locale)
        handler = self._handlers.get(click.kind)
        if handler is None:
            return Message(body=translator(locale)(NOT_AVAILABLE))
        try:
            return await handler(click, locale)
        except UserFacingError as exc:
            return Message(body=str(exc))
        except Exception as exc:
            self.service.problems.problem(
                problem_key(f"click {click.kind}", exc),
                "a %s click on post %s failed",
                click.kind,
                click.post_id,
                exc=exc,
            )
            return failure_message(locale, exc)

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
            locale = await self.service.locale_for(click.channel, click.user_locale)
            return Message(body=translator(locale)(ANSWER_NOT_RECORDED))
        except Exception as exc:
            locale = await self.service.locale_for(click.channel, click.user_locale)
            self.service.problems.problem(
                problem_key("click answer", exc),
                "a click on post %s failed",
                click.post_id,
                exc=exc,
            )
            return failure_message(locale, exc)
        self.service.metrics.click_seconds.observe(time.monotonic() - started)
        return reply.message


__all__ = [
    "Click",
    "ClickHandler",
    "FormOpener",
    "Interactions",
    "SubmitHandler",
    "UserAdminCheck",
]
