"""Driving a fake Discord over HTTP: the benchmark runs the fake in its own process (the
real Discord is not on the bot's CPU) and asks it for a burst of clicks and for what it saw.

    POST /_fake/burst {"message_id": …, "users": 1000}   clicks over the gateway, as fast as
                                                          it can send them
    POST /_fake/http_burst {"message_id": …, "users": 1000, "port": …}
                                                          signed clicks to the bot's HTTP
                                                          endpoint, all at once; latencies
    GET  /_fake/state[?callbacks=N]                       callback latencies and counts

A burst's clicks are from users ``first_user`` … (default 10**15) in ``channel_id``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

from aiohttp import web

from tests.adapters.discord.fake_discord import FakeDiscord, Interaction, json_response


def add_control_routes(app: web.Application, fake: FakeDiscord) -> None:
    last: set[str] = set()  # the interactions of the latest gateway burst

    async def burst(request: web.Request) -> web.Response:
        """Send `users` clicks on `message_id` (choices round-robin) as fast as possible."""
        spec = await request.json()
        payloads = burst_payloads(fake, spec)
        frames = []
        last.clear()
        for p in payloads:
            fake.interactions[p["id"]] = Interaction(p["id"], p["token"], 3, p["channel_id"], 0.0)
            last.add(p["id"])
            frames.append(json.dumps({"op": 0, "t": "INTERACTION_CREATE", "s": 0, "d": p}))
        ws = fake.socket_for(fake.guild_id)
        for p, frame in zip(payloads, frames, strict=True):
            fake.interactions[p["id"]].dispatched_at = time.monotonic()
            await ws.send_str(frame)
        return json_response({"sent": len(frames)})

    def callbacks_of_last(start: int = 0) -> list[Any]:
        return [
            c
            for c in fake.calls[start:]
            if c.path.startswith("/interactions/") and c.path.split("/")[2] in last
        ]

    async def state(request: web.Request) -> web.Response:
        """The latest burst's callbacks. ``?callbacks=N``: first wait (up to a minute)
        until N of them arrived — one request instead of polling while it is answered."""
        want = int(request.query.get("callbacks", "0"))
        if want:
            seen = [0, 0]  # calls scanned, callbacks among them: each call looked at once

            def enough() -> bool:
                seen[1] += len(callbacks_of_last(seen[0]))
                seen[0] = len(fake.calls)
                return seen[1] >= want

            with contextlib.suppress(AssertionError):  # timed out: report what there is
                await fake.until(enough, timeout=60)
        latencies = []
        types: dict[str, int] = {}
        mine = callbacks_of_last()
        for c in mine:
            if c.status < 300:
                latencies.append(c.at - fake.interactions[c.path.split("/")[2]].dispatched_at)
                key = str(c.json.get("type"))
                types[key] = types.get(key, 0) + 1
        return json_response(
            {
                "callback_latencies": latencies,
                "callback_types": types,
                "rest_calls": len(fake.calls),
                "cpu_seconds": time.process_time(),
                "dispatch_span": _span([fake.interactions[i].dispatched_at for i in last]),
                "callback_span": _span([c.at for c in mine]),
                "failed": [
                    f"{c.method} {c.path} {c.status}" for c in fake.calls if c.status >= 300
                ],
            }
        )

    async def http_burst(request: web.Request) -> web.Response:
        """Sign every click first, open one keep-alive connection per click (as Discord's
        edge holds them), then send them all at once; each is timed from its send to the
        end of the bot's answer."""
        spec = await request.json()
        requests = []
        for p in burst_payloads(fake, spec):
            body = json.dumps(p).encode()
            head = "".join(f"{k}: {v}\r\n" for k, v in fake.http.signed_headers(body).items())
            path = spec.get("path", "/discord/interactions")
            requests.append(
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}"
                f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
        return json_response(await _fire(spec["port"], requests))

    async def public_key(request: web.Request) -> web.Response:
        return json_response({"public_key": fake.http.public_key})

    app.router.add_post("/_fake/burst", burst)
    app.router.add_post("/_fake/http_burst", http_burst)
    app.router.add_get("/_fake/public_key", public_key)
    app.router.add_get("/_fake/state", state)


def burst_payloads(fake: FakeDiscord, spec: dict[str, Any]) -> list[dict[str, Any]]:
    message = fake.messages[spec["message_id"]]
    ids = [b["custom_id"] for row in message["components"] for b in row["components"]]
    first = spec.get("first_user", 10**15)
    return [
        fake.click_payload(
            spec["message_id"],
            ids[i % len(ids)],
            user_id=str(first + i),
            name=f"u{i}",
            channel_id=spec.get("channel_id") or fake.channel_id,
        )
        for i in range(spec["users"])
    ]


async def _fire(port: int, requests: list[bytes]) -> dict[str, Any]:
    opened = [await asyncio.open_connection("127.0.0.1", port) for _ in requests]
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    types: dict[str, int] = {}

    async def one(i: int, raw: bytes) -> None:
        reader, writer = opened[i]
        t0 = time.perf_counter()
        writer.write(raw)
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        body = await reader.readexactly(length)
        latencies.append(time.perf_counter() - t0)
        status = head.split()[1].decode()
        statuses[status] = statuses.get(status, 0) + 1
        kind = str(json.loads(body).get("type")) if status == "200" else "-"
        types[kind] = types.get(kind, 0) + 1
        writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i, raw) for i, raw in enumerate(requests)))
    return {
        "latencies": latencies,
        "statuses": statuses,
        "types": types,
        "elapsed": time.perf_counter() - t0,
        "cpu_seconds": time.process_time(),
    }


def _span(times: list[float]) -> float:
    times = [t for t in times if t]
    return max(times) - min(times) if times else 0.0


async def serve_forever(port: int) -> None:
    """Run a fake on `port` until cancelled (the benchmark's separate process)."""
    async with FakeDiscord(port=port, control=True) as fake:
        print(f"fake discord on {fake.api_base}", flush=True)
        await asyncio.Event().wait()
