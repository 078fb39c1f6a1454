"""What the public port does with request bodies that never arrive whole, and with
requests aiohttp cannot parse: answered, counted, logged once per interval, no traceback.

Every body is read before any route sees it (`BodyGuard.middleware`), within `deadline`
seconds for the whole body: a client that dribbles its body is answered 408 and
disconnected at the deadline; one that disconnects mid-body, or sends a body aiohttp cannot
decode (a bad chunk), is dropped. Routes then read the body from memory: aiohttp keeps
what `request.read()` returned. The one exception is a multipart upload to a route marked
`@streams_body` (the dashboard's file forms, up to 100 MiB, written to disk as they
arrive): its route reads it inside `streamed(request)`, whose deadline grows with the
announced length (`deadline` + length at `MIN_STREAM_RATE`), and a slow, cut or malformed
upload is answered and counted the same way. Requests that fail in aiohttp's own parser
never reach a middleware; aiohttp logs them with a traceback on the logger it is given,
so it is given `PROTOCOL_LOG`, whose filter turns those records into the same throttled line.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.http import HttpProcessingError

from bot.logs import ThrottledLog

log = logging.getLogger("adapters.web.server")

BODY_DEADLINE = 10.0  # seconds for a whole request body; Slack's and Discord's take ms
# aiohttp keeps reading an unread body for 10 s after the answer by default; every body is
# read here first, so one left unread belongs to a client too slow or too large (408, 413).
LINGERING_TIME = 0.0
# A streamed upload must average this much beyond `deadline`: 100 MiB has 410 s.
MIN_STREAM_RATE = 256 * 1024
STREAMS = "_streams_body"
_DEADLINE = web.RequestKey("body_deadline", float)
F = TypeVar("F", bound=Callable[..., Any])

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
        if request.body_exists and _streamed_here(request):
            loop = asyncio.get_running_loop()
            allowed = self.deadline + (request.content_length or 0) / MIN_STREAM_RATE
            request[_DEADLINE] = loop.time() + allowed
            try:
                return await handler(request)
            except _StreamCut as cut:
                return self._cut(request, cut.reason)
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

    def _cut(self, request: web.Request, reason: str) -> web.StreamResponse:
        if reason == "deadline":
            self._count(request, reason, "did not arrive within its deadline")
            answer = web.Response(status=408, text="request body too slow\n")
        elif reason == "disconnected":
            self._count(request, reason, "was cut short: the client disconnected")
            answer = web.Response(status=400)
        else:
            self._count(request, reason, "could not be decoded")
            answer = web.Response(status=400, text="malformed request body\n")
        answer.force_close()
        return answer

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


def streams_body(handler: F) -> F:
    """Mark a route that reads multipart uploads itself, inside `streamed(request)`."""
    setattr(handler, STREAMS, True)
    return handler


def _streamed_here(request: web.Request) -> bool:
    if request.content_type != "multipart/form-data":
        return False
    return bool(getattr(request.match_info.handler, STREAMS, False))


class _StreamCut(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@asynccontextmanager
async def streamed(request: web.Request) -> AsyncIterator[None]:
    """Read a streamed upload's body within its deadline. A slow, cut or malformed body
    leaves as an exception the guard answers (408 or 400, counted, the connection closed):
    let it through."""
    when = request.get(_DEADLINE)
    if when is None:  # not a streamed request: its body is in memory already
        yield
        return
    try:
        async with asyncio.timeout_at(when):
            yield
    except TimeoutError:
        raise _StreamCut("deadline") from None
    except ConnectionResetError:
        raise _StreamCut("disconnected") from None
    except (web.RequestPayloadError, HttpProcessingError, ValueError) as exc:
        raise _StreamCut("malformed") from exc


def is_cut(exc: BaseException) -> bool:
    """Whether `exc` is a streamed body's failure, for the guard to answer."""
    return isinstance(exc, _StreamCut)


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

__all__ = [
    "BODY_DEADLINE",
    "LINGERING_TIME",
    "MIN_STREAM_RATE",
    "PROTOCOL_LOG",
    "AbortedBody",
    "BodyGuard",
    "is_cut",
    "streamed",
    "streams_body",
]
