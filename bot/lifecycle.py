"""`Lifecycle`: every long-lived part of the bot — the store, the runner, the scheduler,
the demo dispatcher, the platforms' clients and adapters, the HTTP server — starts with
`initialize()` and stops with `shutdown()`, or is entered with ``async with``; the
composition root stacks them in an `AsyncExitStack` (docs/architecture.md, "Lifecycle")."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Lifecycle:
    async def initialize(self) -> None:
        """Start (connect, load, spawn background work)."""

    async def shutdown(self) -> None:
        """Stop: finish or cancel what was started; safe to call once more."""

    async def __aenter__(self) -> Self:
        await self.initialize()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.shutdown()


__all__ = ["Lifecycle"]
