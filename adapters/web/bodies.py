"""What the public port does with request bodies that never arrive whole, and with
requests aiohttp cannot parse: answered, counted, logged once per interval, no traceback.

Every body is read before any route sees it (`BodyGuard.middleware`), within `deadline`
seconds for the whole body: a client that dribbles its body is answered 408 and
disconnected at the deadline; one that disconnects mid-body, or sends a body aiohttp cannot
decode (a bad chunk), is dropped. Routes then read the body from memory: aiohttp keeps
what `request.read()` returned. Requests that fail in aiohttp's own parser never reach a
middleware; aiohttp logs them with a traceback on the logger it is given, so it is given
`PROTOCOL_LOG`, whose filter turns those records into the same throttled line.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.http import HttpProcessingError

from bot.logs import ThrottledLog

log = logging.getLogger("adapters.web.server")

BODY_DEADLINE = 10.0  # seconds for a whole request body; Slack's and Discord's take ms
# aiohttp keeps reading an unread body for 10 s after the answer by default; every body is
# read here first, so one left unread belongs to a client too slow or too large (408, 413).
LINGERING_TIME = 0.0

AbortedBody = Callable[[str], None]  # the reason: "deadline", "disconnected", "malformed"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class BodyGuard:
    def __init__(
        self, deadline: float, aborted: AbortedBody, problems: ThrottledLog | None = None
    ) -> None:
        self.deadline = deadline
        self._aborted = aborted
        self._problems = problems or ThrottledLog(log)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.body_exists:
            try:
                async with asyncio.timeout(self.deadline):
                    await request.read()
            except TimeoutError:
                self._count(request, "deadline", "did not arrive within %g s", self.deadline)
                answer = web.Response(status=408, text="request body too slow\n")
                answer.force_close()
                return answer
            except ConnectionResetError:
                self._count(request, "disconnected", "was cut short: the client disconnected")
                return web.Response(status=400)  # nobody is there to read it
            except (web.RequestPayloadError, HttpProcessingError) as exc:
                self._count(request, "malformed", "could not be decoded (%s)", _summary(exc))
                answer = web.Response(status=400, text="malformed request body\n")
                answer.force_close()
                return answer
        return await handler(request)

    def _count(self, request: web.Request, reason: str, why: str, *args: object) -> None:
        self._aborted(reason)
        size = request.content_length
        self._problems.problem(
            f"http body {reason}",
            "HTTP: a request body (%s, %s %s from %s) " + why,
            f"{size} bytes" if size is not None else "chunked",
            request.method,
            request.path,
            request.remote,
            *args,
            level=logging.WARNING,
        )


class _ParserErrorsInOneLine(logging.Filter):
    """aiohttp's parser errors (anyone can send them) as one throttled line; every other
    record — a route's own exception — passes untouched, traceback and all."""

    def __init__(self) -> None:
        super().__init__()
        self._problems = ThrottledLog(log)

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, HttpProcessingError):
            return True
        self._problems.problem(
            f"http malformed {type(exc).__name__}",
            "HTTP: a malformed request (%s)",
            _summary(exc),
            level=logging.WARNING,
        )
        return False


def _summary(exc: Exception) -> str:
    """aiohttp's messages span lines ("400, message:\n  Invalid character…"): one line."""
    return " ".join(str(exc).split())[:160] or type(exc).__name__


PROTOCOL_LOG = logging.getLogger("adapters.web.protocol")
PROTOCOL_LOG.addFilter(_ParserErrorsInOneLine())

__all__ = ["BODY_DEADLINE", "LINGERING_TIME", "PROTOCOL_LOG", "AbortedBody", "BodyGuard"]
