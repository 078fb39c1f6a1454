"""One error root. `UserFacingError` messages are safe to show in chat."""

from __future__ import annotations


class QuizError(Exception):
    """Root of every error quizbot raises on purpose."""


class UserFacingError(QuizError):
    """A problem the user can fix; the message names the bad value and the fix."""


class ConfigError(UserFacingError):
    """A setting is missing or invalid."""


class QuestionBankError(UserFacingError):
    """The question bank failed validation; `problems` lists every error found."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


class StorageError(QuizError):
    """The database could not be opened or used."""


class StorageUnavailable(StorageError):
    """The database did not answer (after retries): the work was not done, and may be
    tried again in a moment."""


class PlatformError(QuizError):
    """A chat platform refused or did not answer a call (after the client's retries)."""

    def __init__(self, platform: str, method: str, status: int | None, reason: str) -> None:
        self.platform = platform
        self.method = method
        self.status = status
        self.reason = reason
        super().__init__(f"{platform} {method} failed ({status or 'no status'}): {reason}")


class NotInChannel(PlatformError):
    """The bot may not post in the channel (not invited, archived, no access)."""


class MissingExtraError(QuizError):
    """An optional extra is needed; the message names the install command."""

    def __init__(self, what: str, extra: str) -> None:
        super().__init__(f"{what} needs the '{extra}' extra: pip install 'quizbot[{extra}]'")
