"""The console adapter: a channel in the terminal (`quizbot play`)."""

from adapters.console.chat import ConsoleChat
from adapters.console.play import ConsoleSession

__all__ = ["ConsoleChat", "ConsoleSession"]
