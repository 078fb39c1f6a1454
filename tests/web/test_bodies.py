"""Request bodies that never finish, over raw sockets against the real server on 127.0.0.1:
each is closed at the read deadline or on the client's disconnect, counted, and logged
once per interval without a traceback."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from aiohttp import BodyPartReader, web

from adapters.web import WebServer
from adapters.web.bodies import streamed, streams_body
from bot.metrics import MetricsRegistry, QuizMetrics
from tests.polling import eventually

HEAD = (
    b"POST /slack/events HTTP/1.1\r\nHost: quizbot\r\n"
    b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n"
)


def serving(deadline: float) -> tuple[WebServer, QuizMetrics]:
    registry = MetricsRegistry()
    metrics = QuizMetrics(registry)
    server = WebServer(
        registry,
        host="127.0.0.1",
        port=0,
        body_deadline=deadline,
        aborted_body=lambda reason: metrics.http_aborted_bodies.inc(reason=reason),
    )

    async def echo(request: web.Request) -> web.Response:
        return web.Response(text=str(len(await request.read())))

    server.app.router.add_post("/slack/events", echo)
    return server, metrics


async def dribble(port: int, head: bytes, seconds: float) -> tuple[bytes, float]:
    """Send `head`, then one byte every 50 ms: the answer, and how long it was held."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head)
    started = time.monotonic()
    answer = b""
    while time.monotonic() - started < seconds:
        try:
            writer.write(b"x")
            await writer.drain()
            chunk = await asyncio.wait_for(reader.read(4096), 0.05)
        except TimeoutError:
            continue
        except ConnectionError:
            break
        if not chunk:
            break
        answer += chunk
    writer.close()
    return answer, time.monotonic() - started


async def exchange(port: int, raw: bytes, timeout: float = 5.0) -> bytes:
    """Send `raw` on a new connection; what the server answers first (within `timeout`)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(4096), timeout)
    writer.close()
    return answer


async def test_bodies_cut_short_are_counted_and_logged_once_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, metrics = serving(deadline=10.0)
    caplog.set_level(logging.DEBUG, logger="aiohttp")
    caplog.set_level(logging.INFO, logger="adapters.web")
    async with server:
        for _ in range(5):
            _, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(HEAD + b"ab")
            await writer.drain()
            writer.close()
            await writer.wait_closed()
        await eventually(lambda: metrics.http_aborted_bodies.value(reason="disconnected") == 5)
    logged = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.name for r in logged] == ["adapters.web.server"], logged
    assert logged[0].exc_info is None and "1000" in logged[0].getMessage()
    assert not any(r.exc_info for r in caplog.records)


async def test_a_dribbling_body_is_closed_at_the_read_deadline(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, metrics = serving(deadline=0.3)
    async with server:
        answer, held = await dribble(server.port, HEAD, 5.0)
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert held < 2.0, f"held {held:.1f} s"
        assert metrics.http_aborted_bodies.value(reason="deadline") == 1
    assert not any(r.exc_info for r in caplog.records)


async def test_a_whole_body_still_reaches_the_route() -> None:
    server, metrics = serving(deadline=5.0)
    async with server:
        answer = await exchange(server.port, HEAD + b"x" * 1000)
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"1000"), answer
    assert metrics.http_aborted_bodies.value(reason="deadline") == 0


async def test_a_body_that_cannot_be_decoded_is_400_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, metrics = serving(deadline=5.0)
    async with server:
        answer = await exchange(
            server.port,
            b"POST /slack/events HTTP/1.1\r\nHost: quizbot\r\nContent-Encoding: gzip\r\n"
            b"Content-Length: 10\r\n\r\nnot-gzip!!",
        )
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert metrics.http_aborted_bodies.value(reason="malformed") == 1
    assert not any(r.exc_info for r in caplog.records)


async def test_requests_the_parser_refuses_are_one_throttled_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, _ = serving(deadline=5.0)
    async with server:
        for _ in range(3):
            answer = await exchange(
                server.port,
                b"POST /slack/events HTTP/1.1\r\nHost: quizbot\r\n"
                b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
            )
            assert b" 400 " in answer.split(b"\r\n")[0], answer
    logged = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(logged) == 1 and "chunk size" in logged[0].getMessage(), logged
    assert not any(r.exc_info for r in caplog.records)


async def test_a_routes_own_exception_keeps_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, _ = serving(deadline=5.0)

    async def broken(request: web.Request) -> web.Response:
        raise RuntimeError("a bug in a route")

    server.app.router.add_get("/broken", broken)
    async with server:
        answer = await exchange(server.port, b"GET /broken HTTP/1.1\r\nHost: quizbot\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 500"), answer
    assert any(r.exc_info and "a bug in a route" in str(r.exc_info[1]) for r in caplog.records)


def streaming(deadline: float) -> tuple[WebServer, QuizMetrics, list[int]]:
    """The server with an upload route that streams multipart bodies (the dashboard's way)."""
    server, metrics = serving(deadline)
    sizes: list[int] = []

    @streams_body
    async def upload(request: web.Request) -> web.Response:
        async with streamed(request):
            reader = await request.multipart()
        size = 0
        while True:
            async with streamed(request):
                part = await reader.next()
            if part is None:
                break
            assert isinstance(part, BodyPartReader)
            while True:
                async with streamed(request):
                    chunk = await part.read_chunk(64 * 1024)
                if not chunk:
                    break
                size += len(chunk)
        sizes.append(size)
        return web.Response(text=str(size))

    server.app.router.add_post("/upload", upload)
    return server, metrics, sizes


def multipart_head(path: str, length: int) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: quizbot\r\n"
        f"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def multipart(data: bytes) -> bytes:
    return (
        b'--b\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\n\r\n'
        + data
        + b"\r\n--b--\r\n"
    )


async def test_a_streamed_upload_over_the_in_memory_limit_reaches_its_route_whole() -> None:
    server, metrics, sizes = streaming(deadline=5.0)
    data = bytes(range(256)) * (12 * 1024)  # 3 MiB: over aiohttp's 1 MiB in-memory limit
    body = multipart(data)
    async with server:
        answer = await exchange(server.port, multipart_head("/upload", len(body)) + body, 10.0)
    assert answer.startswith(b"HTTP/1.1 200"), answer
    assert sizes == [len(data)]
    assert metrics.http_aborted_bodies.value(reason="deadline") == 0


@pytest.mark.parametrize("path", ["/upload", "/slack/events"])
async def test_a_dribbled_multipart_body_is_closed_at_its_deadline_streamed_or_not(
    path: str, caplog: pytest.LogCaptureFixture
) -> None:
    server, metrics, sizes = streaming(deadline=0.3)
    async with server:
        # 4,000 bytes announced: the streamed route's deadline is 0.3 s + 4,000 / 256 KiB/s.
        preamble = b'--b\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\n'
        answer, held = await dribble(server.port, multipart_head(path, 4000) + preamble, 5.0)
        await eventually(lambda: metrics.http_aborted_bodies.value(reason="deadline") == 1)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert held < 2.0, f"held {held:.1f} s"
    assert sizes == []
    assert not any(r.exc_info for r in caplog.records)


async def test_a_streamed_upload_cut_short_is_counted_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, metrics, sizes = streaming(deadline=10.0)
    caplog.set_level(logging.DEBUG, logger="aiohttp")
    async with server:
        for _ in range(3):
            _, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(multipart_head("/upload", 100_000) + multipart(b"x" * 500)[:300])
            await writer.drain()
            writer.close()
            await writer.wait_closed()
        await eventually(lambda: metrics.http_aborted_bodies.value(reason="disconnected") == 3)
    assert sizes == []
    assert not any(r.exc_info for r in caplog.records)
