"""Driving a fake Discord over HTTP: the benchmark runs the fake in its own process (the
real Discord is not on the bot's CPU) and asks it for a burst of clicks and for what it saw.

    POST /_fake/burst {"message_id": …, "users": 1000}   clicks, as fast as it can send them
    GET  /_fake/state[?callbacks=N]                       callback latencies and counts
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import asdict

from aiohttp import web

from tests.adapters.discord.fake_discord import FakeDiscord, Interaction, json_response


def add_control_routes(app: web.Application, fake: FakeDiscord) -> None:
    async def burst(request: web.Request) -> web.Response:
        """Send `users` clicks on `message_id` (choices round-robin) as fast as possible."""
        spec = await request.json()
        message = fake.messages[spec["message_id"]]
        ids = [b["custom_id"] for row in message["components"] for b in row["components"]]
        payloads = [
            fake.click_payload(
                spec["message_id"], ids[i % len(ids)], user_id=str(10**15 + i), name=f"u{i}"
            )
            for i in range(spec["users"])
        ]
        frames = []
        for p in payloads:
            fake.interactions[p["id"]] = Interaction(p["id"], p["token"], 3, p["channel_id"], 0.0)
            frames.append(json.dumps({"op": 0, "t": "INTERACTION_CREATE", "s": 0, "d": p}))
        ws = fake.socket_for(fake.guild_id)
        for p, frame in zip(payloads, frames, strict=True):
            fake.interactions[p["id"]].dispatched_at = time.monotonic()
            await ws.send_str(frame)
        return json_response({"sent": len(frames)})

    async def state(request: web.Request) -> web.Response:
        """``?callbacks=N``: first wait (up to a minute) until N interaction callbacks
        arrived — one request instead of polling while the burst is answered."""
        want = int(request.query.get("callbacks", "0"))
        if want:
            seen = [0, 0]  # calls scanned, callbacks among them: each call looked at once

            def enough() -> bool:
                calls = fake.calls
                for i in range(seen[0], len(calls)):
                    seen[1] += calls[i].path.startswith("/interactions/")
                seen[0] = len(calls)
                return seen[1] >= want

            with contextlib.suppress(AssertionError):  # timed out: report what there is
                await fake.until(enough, timeout=60)
        latencies = {}
        types: dict[str, int] = {}
        for c in fake.calls:
            if c.path.startswith("/interactions/") and c.status < 300:
                inter = fake.interactions.get(c.path.split("/")[2])
                if inter is not None and inter.dispatched_at:
                    latencies[inter.id] = c.at - inter.dispatched_at
                    key = str(c.json.get("type"))
                    types[key] = types.get(key, 0) + 1
        return json_response(
            {
                "identified": fake._identified.is_set(),
                "messages": [m for m in fake.messages.values() if m["components"]],
                "callback_latencies": list(latencies.values()),
                "callback_types": types,
                "edits_of_original": len(
                    [c for c in fake.calls if c.method == "PATCH" and "@original" in c.path]
                ),
                "rest_calls": len(fake.calls),
                "cpu_seconds": time.process_time(),
                "dispatch_span": _span([i.dispatched_at for i in fake.interactions.values()]),
                "callback_span": _span(
                    [c.at for c in fake.calls if c.path.startswith("/interactions/")]
                ),
                "calls": [asdict(c) | {"json": None} for c in fake.calls[-50:]],
                "failed": [
                    f"{c.method} {c.path} {c.status}" for c in fake.calls if c.status >= 300
                ],
            }
        )

    app.router.add_post("/_fake/burst", burst)
    app.router.add_get("/_fake/state", state)


def _span(times: list[float]) -> float:
    times = [t for t in times if t]
    return max(times) - min(times) if times else 0.0


async def serve_forever(port: int) -> None:
    """Run a fake on `port` until cancelled (the benchmark's separate process)."""
    async with FakeDiscord(port=port, control=True) as fake:
        print(f"fake discord on {fake.api_base}", flush=True)
        await asyncio.Event().wait()
