"""Request bodies that never finish, over raw sockets against the real server on 127.0.0.1:
each is closed at the read deadline or on the client's disconnect, counted, and logged
once per interval without a traceback."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from aiohttp import web

from adapters.web import WebServer
from bot.metrics import MetricsRegistry, QuizMetrics

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


async def until(condition: object, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


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
        await until(lambda: metrics.http_aborted_bodies.value(reason="disconnected") == 5)
    logged = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.name for r in logged] == ["adapters.web.server"], logged
    assert logged[0].exc_info is None and "1000" in logged[0].getMessage()
    assert not any(r.exc_info for r in caplog.records)


async def test_a_dribbling_body_is_closed_at_the_read_deadline(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, metrics = serving(deadline=0.3)
    async with server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(HEAD)
        started = time.monotonic()
        answer = b""
        # One byte every 50 ms, for as long as the server keeps the connection.
        while time.monotonic() - started < 5.0:
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
        held = time.monotonic() - started
        writer.close()
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert held < 2.0, f"held {held:.1f} s"
        assert metrics.http_aborted_bodies.value(reason="deadline") == 1
    assert not any(r.exc_info for r in caplog.records)


async def test_a_whole_body_still_reaches_the_route() -> None:
    server, metrics = serving(deadline=5.0)
    async with server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(HEAD + b"x" * 1000)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(4096), 5.0)
        writer.close()
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"1000"), answer
    assert metrics.http_aborted_bodies.value(reason="deadline") == 0


async def test_a_body_that_cannot_be_decoded_is_400_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, metrics = serving(deadline=5.0)
    async with server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(
            b"POST /slack/events HTTP/1.1\r\nHost: quizbot\r\nContent-Encoding: gzip\r\n"
            b"Content-Length: 10\r\n\r\nnot-gzip!!"
        )
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(4096), 5.0)
        writer.close()
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert metrics.http_aborted_bodies.value(reason="malformed") == 1
    assert not any(r.exc_info for r in caplog.records)


async def test_requests_the_parser_refuses_are_one_throttled_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, _ = serving(deadline=5.0)
    async with server:
        for _ in range(3):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(
                b"POST /slack/events HTTP/1.1\r\nHost: quizbot\r\n"
                b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"
            )
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(4096), 5.0)
            writer.close()
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
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET /broken HTTP/1.1\r\nHost: quizbot\r\n\r\n")
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(4096), 5.0)
        writer.close()
    assert answer.startswith(b"HTTP/1.1 500"), answer
    assert any(r.exc_info and "a bug in a route" in str(r.exc_info[1]) for r in caplog.records)
