"""The public HTTP port under slow and aborted request bodies (issue 22, item 4).

    .venv/bin/python bench/http_bodies.py [--slow 300] [--every 5] [--aborts 1000]

The bot's own `WebServer` (the body guard and its default 10 s deadline) on 127.0.0.1,
with a route that reads its body as Slack's does. Two attacks, over raw sockets:
- `--slow` connections each send their headers and then one body byte every `--every`
  seconds: how long the server holds them (the deadline's answer is 408 and a close);
- `--aborts` clients each send headers and 2 of 1,000 body bytes, then close: how many
  bytes of log that costs (aiohttp logged a 1.1 KB traceback for each before the guard).
A whole body sent after the attacks must still be answered.
The last lines are one per target:
``target <name>: <measured> (goal <goal>) PASS|FAIL``; the exit code is 0 either way.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from adapters.web.bodies import BODY_DEADLINE
from bench._common import median, percentile, target
from tests.web.test_bodies import serving

HEAD = (
    b"POST /slack/events HTTP/1.1\r\nHost: quizbot\r\n"
    b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n"
)


async def slow_client(port: int, every: float, limit: float) -> float:
    """Headers, then a byte every `every` s until the server closes: seconds held."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    writer.write(HEAD)
    try:
        while time.monotonic() - started < limit:
            writer.write(b"x")
            await writer.drain()
            try:
                if not await asyncio.wait_for(reader.read(4096), every):
                    break
            except TimeoutError:
                continue
            break  # the answer (408): the server closes after it
    except ConnectionError:
        pass
    held = time.monotonic() - started
    writer.close()
    return held


async def aborting_client(port: int) -> None:
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(HEAD + b"ab")
    await writer.drain()
    writer.close()
    await writer.wait_closed()


async def whole_body(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(HEAD + b"x" * 1000)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(4096), 10)
    writer.close()
    return answer


async def main(args: argparse.Namespace) -> None:
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    server, metrics = serving(BODY_DEADLINE)  # /slack/events answers the body's length
    limit = BODY_DEADLINE * 9  # the old behaviour: held for as long as the client liked
    async with server:
        held = await asyncio.gather(
            *(slow_client(server.port, args.every, limit) for _ in range(args.slow))
        )
        before = len(log.getvalue())
        for start in range(0, args.aborts, 50):
            await asyncio.gather(
                *(aborting_client(server.port) for _ in range(min(50, args.aborts - start)))
            )
        deadline = time.monotonic() + 10
        while metrics.http_aborted_bodies.value(reason="disconnected") < args.aborts:
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        logged = len(log.getvalue()) - before
        answer = await whole_body(server.port)
    counted = metrics.http_aborted_bodies.value(reason="disconnected")
    print(
        f"{args.slow} slow bodies (a byte every {args.every:g} s): held median "
        f"{median(held):.1f} s, max {max(held):.1f} s; deadline {BODY_DEADLINE:g} s; "
        f"counted {metrics.http_aborted_bodies.value(reason='deadline'):.0f}"
    )
    print(f"{args.aborts} aborted bodies: {counted:.0f} counted, {logged} bytes of log")
    slowest = percentile(held, 100)
    target(
        "http_slow_body_held_seconds",
        f"{slowest:.1f} s max over {args.slow}",
        f"<= {BODY_DEADLINE + 2:g} s",
        slowest <= BODY_DEADLINE + 2,
    )
    per_thousand = logged * 1000 / max(1, args.aborts)
    target(
        "http_aborted_body_log_bytes_per_1000",
        f"{per_thousand:.0f} B",
        "<= 1100 B (one traceback's size)",
        per_thousand <= 1100 and counted == args.aborts,
    )
    ok = answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"1000")
    target("http_whole_body_after_attacks", "answered" if ok else repr(answer[:40]), "200", ok)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slow", type=int, default=300)
    parser.add_argument("--every", type=float, default=5.0)
    parser.add_argument("--aborts", type=int, default=1000)
    asyncio.run(main(parser.parse_args()))
