"""An adapter's HTTP endpoint served on 127.0.0.1, for the tests and the benchmarks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Protocol

from aiohttp import web

Route = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Mounts(Protocol):
    def mount(self, app: web.Application) -> None: ...


@asynccontextmanager
async def endpoint_served(
    adapter: Mounts, *, routes: Mapping[str, Route] | None = None, backlog: int = 128
) -> AsyncIterator[int]:
    """The adapter's HTTP endpoint (and `routes`, POST) on 127.0.0.1: its port."""
    app = web.Application()
    adapter.mount(app)
    for path, handler in (routes or {}).items():
        app.router.add_post(path, handler)
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=backlog)
    await site.start()
    try:
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()
