"""Slack's requests in, over HTTP (``POST /slack/events``) or Socket Mode: checked, turned
into the adapter's calls, and acknowledged once they are safe.

One layer handles the hot path (slash commands and button clicks), without Bolt behind it:
Bolt parses and routes a request (about a millisecond of CPU each) before a listener can
acknowledge it, and under a burst of a thousand clicks every acknowledgement then waits
for every request to be parsed. Here a request costs a signature check, a form decode and
one JSON parse; the acknowledgement (an empty 200, or the Socket Mode envelope's ack)
goes out when the adapter's handler returns — after an answer is recorded, or after a
command is stored to be replayed after a crash. The Events API (``url_verification``,
``event_callback``: JSON bodies, few of them) goes through Bolt, its documented route,
except the event types given as `direct` (``app_home_opened``: a burst when a workspace
opens its Home tabs at once), handed to their handler as the hot path's are.

A body that is not what Slack sends (not form-encoded, no ``payload``/``command``, JSON
that does not parse or is nested too deep, a payload missing its fields) is answered 400
over HTTP, acknowledged and dropped over Socket Mode, and logged once per interval —
never an exception.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient
from yarl import URL

from bot.logs import ThrottledLog

log = logging.getLogger(__name__)

FORM = "application/x-www-form-urlencoded"
MAX_BODY = 1 << 20  # Slack's own payloads are a few KiB; a MiB is already absurd


class Malformed(ValueError):
    """A request that is not what Slack sends: dropped with a logged line."""


class RequestHandler(Protocol):
    async def command(self, form: Mapping[str, str]) -> None:
        """A slash command: return once it is safe to acknowledge."""
        ...

    async def interaction(
        self, payload: Mapping[str, Any], *, retry: bool = False
    ) -> dict[str, Any] | None:
        """An interaction payload (`retry`: Slack says it sent it before): return once it
        is safe to acknowledge, with the acknowledgement's body where it has one (a form
        submission's errors)."""
        ...


DropCounter = Callable[[str], None]
# An Events API body (``event_callback``) of an event type handled without Bolt: return
# once it is safe to acknowledge.
DirectEvent = Callable[[Mapping[str, Any]], Awaitable[None]]


class Inbound:
    def __init__(
        self,
        handler: RequestHandler,
        events: AsyncApp,
        *,
        signing_secret: str | None = None,
        dropped: DropCounter | None = None,
        direct: Mapping[str, DirectEvent] | None = None,
    ) -> None:
        self._handler = handler
        self._events = events
        self._direct = dict(direct or {})
        self._verifier = SignatureVerifier(signing_secret) if signing_secret else None
        self._socket: SocketModeClient | None = None
        self._problems = ThrottledLog(log)
        self._dropped = dropped or (lambda kind: None)

    async def shutdown(self) -> None:
        if self._socket is not None:
            await self._socket.close()  # type: ignore[no-untyped-call]
            self._socket = None

    # -- HTTP mode ---------------------------------------------------------------------

    async def handle_http(self, request: web.Request) -> web.Response:
        """Verify the signature (401 otherwise), hand the request over, acknowledge."""
        if (request.content_length or 0) > MAX_BODY:
            return web.json_response({"error": "request too large"}, status=413)
        body = await request.read()
        if not self._signed(body, request):
            return web.json_response({"error": "invalid request"}, status=401)
        try:
            if request.content_type == FORM:
                retry = request.headers.get("X-Slack-Retry-Num", "0") not in ("", "0")
                answer = await self._form(body.decode("utf-8", errors="replace"), retry)
                if answer is not None:
                    return web.json_response(answer)
                return web.Response(status=200)
            text = body.decode("utf-8", errors="replace")
            # Bolt would answer 500 with a traceback
            parsed = _json_object(text, "an Events API body")
            if (direct := self._direct_event(parsed)) is not None:
                await direct(parsed)
                return web.Response(status=200)
            bolt = AsyncBoltRequest(
                body=text,
                query=request.query_string,
                headers=_headers(request.headers.items()),
            )
            response: web.Response = await to_aiohttp_response(
                await self._events.async_dispatch(bolt)
            )
            return response
        except Malformed as exc:
            self._drop(str(exc))
            return web.json_response({"error": "malformed request"}, status=400)

    async def _form(self, body: str, retry: bool) -> dict[str, Any] | None:
        form = form_fields(body)
        if "payload" in form:
            return await self._handler.interaction(_json_object(form["payload"]), retry=retry)
        if "command" in form:
            await self._handler.command(form)
            return None
        raise Malformed("a form without payload or command")

    def _direct_event(self, body: Mapping[str, Any]) -> DirectEvent | None:
        """The handler of an ``event_callback`` body's event type, where it has its own."""
        event = body.get("event")
        if body.get("type") != "event_callback" or not isinstance(event, Mapping):
            return None
        kind = event.get("type")
        return self._direct.get(kind) if isinstance(kind, str) else None

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

    def _drop(self, why: str) -> None:
        self._dropped(why.split(":", 1)[0][:40])
        self._problems.problem(f"slack malformed {why[:60]}", "Slack: dropped a request (%s)", why)

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
        answer: dict[str, Any] | None = None
        try:
            payload = envelope.payload
            if not isinstance(payload, dict):
                raise Malformed(f"a {envelope.type} envelope without a JSON payload")
            if envelope.type == "slash_commands":
                await self._handler.command({str(k): str(v) for k, v in payload.items()})
            elif envelope.type == "interactive":
                retry = bool(envelope.retry_attempt)
                answer = await self._handler.interaction(payload, retry=retry)
            elif envelope.type == "events_api" and (direct := self._direct_event(payload)):
                await direct(payload)
            elif envelope.type == "events_api":
                await self._events.async_dispatch(
                    AsyncBoltRequest(mode="socket_mode", body=payload, query="", headers={})
                )
        except Malformed as exc:
            self._drop(str(exc))
        except Exception as exc:
            self._problems.problem(
                f"slack envelope {type(exc).__name__}", "Slack: an envelope failed", exc=exc
            )
        # Acknowledged last: an answer is recorded (or a command stored) first, so a crash
        # before this line makes Slack send the envelope again.
        await client.send_socket_mode_response(
            SocketModeResponse(envelope_id=envelope.envelope_id, payload=answer)
        )


def form_fields(body: str) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body's fields (the last of a repeated name),
    as `urllib.parse.parse_qsl(body, keep_blank_values=True)` reads them. yarl (aiohttp's
    URL library) decodes in C: a click's form, a kilobyte of escaped JSON, in a few
    microseconds against urllib's hundred, which a burst of a thousand clicks waits on."""
    return dict(URL.build(query_string=body, encoded=True).query.items())


def _json_object(text: str, what: str = "an interaction payload") -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested thousands deep
        raise Malformed(f"{what} that is not JSON") from None
    if not isinstance(value, dict):
        raise Malformed(f"{what} that is not a JSON object")
    return value


def _headers(items: Any) -> dict[str, Any]:
    out: dict[str, list[str]] = {}
    for key, value in items:
        out.setdefault(str(key).lower(), []).append(str(value))
    return dict(out)


__all__ = ["FORM", "DirectEvent", "Inbound", "Malformed", "RequestHandler", "form_fields"]
