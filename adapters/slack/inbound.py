"""Slack's requests in, over HTTP (``POST /slack/events``) or Socket Mode: acknowledged at
once, then handed to the Bolt app by a small pool of workers.

Why not let Bolt acknowledge: Bolt parses and routes a request (form decoding, middleware,
argument injection: about a millisecond of CPU each) before the listener can call
`ack()`, and polls for that ack every 10 ms. Under a burst of a thousand clicks on one
event loop every acknowledgement then waits for every request to be parsed. Here the
acknowledgement costs a signature check (HTTP) or nothing (Socket Mode) and goes out
first; the Bolt work runs behind it, at most `concurrency` requests at a time, so it never
starves the acknowledgements. Commands and button clicks are acknowledged with an empty
200 either way, which is all this app ever answers them with.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger(__name__)

FORM = "application/x-www-form-urlencoded"


class Inbound:
    def __init__(
        self, app: AsyncApp, *, signing_secret: str | None = None, concurrency: int = 32
    ) -> None:
        self._app = app
        self._verifier = SignatureVerifier(signing_secret) if signing_secret else None
        self._concurrency = concurrency
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self._workers: list[asyncio.Task[None]] = []
        self._socket: SocketModeClient | None = None

    async def start(self) -> None:
        self._workers = [
            asyncio.create_task(self._work(), name=f"slack-worker-{i}")
            for i in range(self._concurrency)
        ]

    async def stop(self, timeout: float = 10.0) -> None:
        """Stop taking requests, finish the queued ones (up to `timeout`), stop."""
        if self._socket is not None:
            await self._socket.close()  # type: ignore[no-untyped-call]
            self._socket = None
        if self._workers:
            try:
                await asyncio.wait_for(self._queue.join(), timeout)
            except TimeoutError:
                log.warning("Slack: %d requests left unprocessed at shutdown", self._queue.qsize())
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []

    async def idle(self) -> None:
        """Wait until every acknowledged request has been processed."""
        await self._queue.join()

    @property
    def backlog(self) -> int:
        return self._queue.qsize()

    async def _work(self) -> None:
        while True:
            pending = await self._queue.get()
            try:
                # Built here, not on the acknowledging path: AsyncBoltRequest parses the body.
                request = AsyncBoltRequest(
                    mode=pending.mode,
                    body=pending.body,
                    query=pending.query,
                    headers=pending.headers,
                )
                await self._app.async_dispatch(request)
            except Exception:
                log.exception("Slack: a request failed after it was acknowledged")
            finally:
                self._queue.task_done()

    # -- HTTP mode ---------------------------------------------------------------------

    async def handle_http(self, request: web.Request) -> web.Response:
        """Verify the signature (401 like Bolt otherwise), acknowledge commands and
        interactions at once; anything else (Events API JSON) goes through Bolt inline."""
        body = await request.read()
        if not self._signed(body, request):
            return web.json_response({"error": "invalid request"}, status=401)
        pending = _Pending(
            "http",
            body.decode("utf-8", errors="replace"),
            request.query_string,
            _headers(request.headers.items()),
        )
        if request.content_type == FORM:
            self._queue.put_nowait(pending)
            return web.Response(status=200)
        bolt_request = AsyncBoltRequest(
            body=pending.body, query=pending.query, headers=pending.headers
        )
        response: web.Response = await to_aiohttp_response(
            await self._app.async_dispatch(bolt_request)
        )
        return response

    def _signed(self, body: bytes, request: web.Request) -> bool:
        if self._verifier is None:
            return False
        try:
            return self._verifier.is_valid(
                body,
                request.headers.get("X-Slack-Request-Timestamp"),
                request.headers.get("X-Slack-Signature"),
            )
        except ValueError:  # a timestamp that is not a number
            return False

    # -- Socket Mode -------------------------------------------------------------------

    async def connect(
        self, app_token: str, web_client: AsyncWebClient, url: str, ping_interval: float
    ) -> None:
        """Connect to `url` (from `apps.connections.open`); the client reconnects by itself."""
        client = SocketModeClient(
            app_token=app_token,
            logger=logging.getLogger("adapters.slack.socket_mode"),
            web_client=web_client,
            ping_interval=ping_interval,
        )
        client.wss_uri = url
        client.socket_mode_request_listeners.append(self._on_envelope)
        self._socket = client
        await client.connect()  # type: ignore[no-untyped-call]

    async def connected(self) -> bool:
        return self._socket is not None and await self._socket.is_connected()

    async def _on_envelope(self, client: Any, envelope: SocketModeRequest) -> None:
        await client.send_socket_mode_response(SocketModeResponse(envelope_id=envelope.envelope_id))
        headers: dict[str, str | Sequence[str]] = {}
        if envelope.retry_attempt is not None:
            headers["x-slack-retry-num"] = str(envelope.retry_attempt)
        if envelope.retry_reason is not None:
            headers["x-slack-retry-reason"] = envelope.retry_reason
        self._queue.put_nowait(_Pending("socket_mode", envelope.payload, "", headers))


@dataclass(frozen=True, slots=True)
class _Pending:
    """An acknowledged request, as it came (parsed by Bolt on a worker)."""

    mode: str  # "http" | "socket_mode"
    body: str | dict[str, Any]
    query: str
    headers: dict[str, str | Sequence[str]]


def _headers(items: Any) -> dict[str, str | Sequence[str]]:
    out: dict[str, list[str]] = {}
    for key, value in items:
        out.setdefault(str(key).lower(), []).append(str(value))
    return dict(out)


__all__ = ["Inbound"]
