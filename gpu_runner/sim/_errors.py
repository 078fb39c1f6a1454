"""Errors of the simulator, rooted in `bot.errors` like every quizbot error."""

from __future__ import annotations

from bot.errors import ConfigError, QuizError, UserFacingError


class OutOfMemoryError(QuizError, RuntimeError):
    """The simulated ``torch.cuda.OutOfMemoryError``: the message follows torch's template.

    The figures of the message are also attributes, so callers need not parse text.
    """

    def __init__(
        self,
        message: str,
        *,
        alloc_size: int,
        total: int,
        free: int,
        allowed: int | None,
        allocated: int,
        reserved: int,
    ) -> None:
        super().__init__(message)
        self.alloc_size = alloc_size
        self.total = total
        self.free = free
        self.allowed = allowed
        self.allocated = allocated
        self.reserved = reserved


class AllocatorConfigError(ConfigError, ValueError):
    """A ``PYTORCH_CUDA_ALLOC_CONF`` string torch would reject (torch's wording)."""


class InvalidFreeError(QuizError, ValueError):
    """`free` got a block that is not live in this allocator (double free, foreign block)."""


class SnapshotError(UserFacingError):
    """A memory-snapshot file cannot be read: missing, corrupted, foreign or wrong shape."""
