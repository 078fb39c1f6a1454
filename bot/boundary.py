"""The one boundary between the core's work and what a member is told when it fails.

Every use case an adapter calls (a command, a click, a form, a file) runs inside `guard`:
a `UserFacingError` becomes its own message (safe to show), anything else becomes the one
"it did not work" reply, logged once per interval with its traceback, never shown.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from bot.domain import Locale
from bot.errors import StorageUnavailable, UserFacingError
from bot.i18n import N_, translator
from bot.logs import ThrottledLog, problem_key
from bot.messages import Message

FAILED = N_("Something went wrong on our side; please try again in a moment.")
STORAGE_DOWN = N_("The quiz's database is not answering right now; please try again in a moment.")

T = TypeVar("T")


def failure_message(locale: Locale, exc: BaseException | None = None) -> Message:
    """The one "it did not work" reply, for every platform."""
    t = translator(locale)
    return Message(body=t(STORAGE_DOWN if isinstance(exc, StorageUnavailable) else FAILED))


async def guard(
    problems: ThrottledLog,
    what: str,
    locale: Locale | Callable[[], Awaitable[Locale]],
    work: Awaitable[T],
    wrap: Callable[[Message], T],
) -> T:
    """`work`'s result; on failure `wrap` of the message the member sees. `locale` may be
    a lookup, awaited only on failure (the hot path reads no setting it does not need)."""
    try:
        return await work
    except UserFacingError as exc:
        return wrap(Message(body=str(exc)))
    except Exception as exc:
        problems.problem(problem_key(what, exc), "%s failed", what, exc=exc)
        said = locale if isinstance(locale, Locale) else await locale()
        return wrap(failure_message(said, exc))


def as_message(message: Message) -> Message:
    return message


__all__ = ["FAILED", "STORAGE_DOWN", "as_message", "failure_message", "guard"]
