"""Discord's side of HTTP interactions, for the fake Discord: each interaction is signed
with the application's key (Ed25519 over timestamp + body, as Discord does) and POSTed to
the bot's endpoint; the bot's answer is recorded as the interaction's initial response
(a ``POST /interactions/<id>/<token>/callback`` call), so tests read both modes alike."""

from __future__ import annotations

import asyncio
import io
import json
import time
from typing import TYPE_CHECKING, Any

import aiohttp
from nacl.signing import SigningKey

from tests.adapters.discord.fake_rest import Call

if TYPE_CHECKING:
    from tests.adapters.discord.fake_discord import FakeDiscord


class HttpInteractions:
    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake
        self.key = SigningKey.generate()
        self.endpoint: str | None = None  # the bot's /discord/interactions: set, HTTP mode
        self.statuses: dict[str, int] = {}  # interaction id -> the bot's HTTP status
        self._session: aiohttp.ClientSession | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def public_key(self) -> str:
        return self.key.verify_key.encode().hex()

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._session is not None:
            await self._session.close()
            self._session = None

    def deliver(self, payload: Any) -> float:
        """POST `payload` in the background (as the gateway sends a frame); the send time."""
        task = asyncio.get_running_loop().create_task(self.post(payload))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return time.monotonic()

    def signed_headers(
        self, body: bytes, *, timestamp: int | None = None, key: SigningKey | None = None
    ) -> dict[str, str]:
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        signature = (key or self.key).sign(stamp.encode() + body).signature.hex()
        return {
            "Content-Type": "application/json",
            "X-Signature-Ed25519": signature,
            "X-Signature-Timestamp": stamp,
        }

    async def post(
        self, payload: Any, *, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        """Sign and POST one interaction (`body`/`headers` replace what Discord would send);
        the bot's status and JSON answer."""
        assert self.endpoint is not None, "start the bot in HTTP mode first"
        if self._session is None:
            self._session = aiohttp.ClientSession()
        raw = json.dumps(payload).encode() if body is None else body
        # Large bodies as a stream (aiohttp warns about big raw bytes).
        data = io.BytesIO(raw) if len(raw) > 64 * 1024 else raw
        async with self._session.post(
            self.endpoint, data=data, headers=headers or self.signed_headers(raw)
        ) as resp:
            status = resp.status
            answer = await resp.json(content_type=None) if resp.content_length != 0 else None
        await self._record(payload, status, answer)
        return status, answer

    async def _record(self, payload: Any, status: int, answer: Any) -> None:
        if not isinstance(payload, dict) or payload.get("id") not in self.fake.interactions:
            return
        self.statuses[payload["id"]] = status
        if status != 200 or not isinstance(answer, dict):
            return
        path = f"/interactions/{payload['id']}/{payload['token']}/callback"
        call = Call("POST", path, {}, answer, at=time.monotonic())
        response = self.fake.routed("POST", path, answer, [], call)
        await self.fake.record(call, response.status)


__all__ = ["HttpInteractions"]
