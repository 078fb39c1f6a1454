"""A fake Discord on 127.0.0.1: the REST API and the gateway WebSocket, enough of both for
the real discord.py client to log in, sync commands, receive interactions and answer them.

Every REST call is recorded (`calls`); tests push gateway dispatches (`dispatch`,
`click`, `command`, `autocomplete`) and assert on what the bot called. Failures are
injected per route: `rate_limit` (a 429 with the ``Via`` header discord.py requires before
it retries) and `fail` (403/404 with a Discord error code).

Wire details discord.py depends on (see docs/platforms.md): JSON responses carry exactly
``Content-Type: application/json``; gateway frames are text (no zlib stream); members have
``flags``; the interaction callback answers ``?with_response=1`` with
``{"interaction": …, "resource": …}``, and 204 without it (the adapter's answer clicks).

Payload shapes live in `fake_payloads`; for the benchmark the fake runs in its own process,
driven over HTTP (`fake_control`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import BodyPartReader, WSMsgType, web

from tests.adapters.discord.fake_http import HttpInteractions
from tests.adapters.discord.fake_payloads import (
    BOT_PERMISSIONS,
    EPHEMERAL,
    LOADING,
    MEMBER_PERMISSIONS,
    DiscordPayloads,
    Json,
    now,
    user,
)

HEARTBEAT_MS = 41250

__all__ = [
    "BOT_PERMISSIONS",
    "EPHEMERAL",
    "MEMBER_PERMISSIONS",
    "Call",
    "FakeDiscord",
    "Interaction",
    "Json",
    "json_response",
]


@dataclass
class Call:
    method: str
    path: str  # without the /api/v10 prefix
    query: dict[str, str]
    json: Any
    files: list[tuple[str, int]] = field(default_factory=list)  # (filename, size)
    at: float = 0.0  # time.monotonic() at arrival
    status: int = 200
    result: Any = None  # an edited message as it stands after the edit


@dataclass
class _Injected:
    method: str
    pattern: re.Pattern[str]
    times: int
    respond: Callable[[], web.Response]


@dataclass
class Interaction:
    id: str
    token: str
    type: int
    channel_id: str
    dispatched_at: float
    responded: bool = False
    original: Json | None = None


class FakeDiscord(DiscordPayloads):
    def __init__(self, *, port: int = 0, control: bool = False, **ids: Any) -> None:
        super().__init__(**ids)
        self.port = port
        self.control = control  # the /_fake/* routes of fake_control (benchmark)
        self.calls: list[Call] = []
        self.identifies: list[Json] = []
        self.threads: dict[str, Json] = {}  # thread id (== its message id) -> channel
        self.interactions: dict[str, Interaction] = {}
        self.commands: list[Json] = []
        self._seq = itertools.count(1)
        self._sockets: list[tuple[web.WebSocketResponse, int, int]] = []  # ws, shard, count
        self._injected: list[_Injected] = []
        self._changed = asyncio.Condition()
        self._identified = asyncio.Event()
        self._runner: web.AppRunner | None = None
        # HTTP mode: interactions are POSTed, signed, to the bot's endpoint (`fake_http`).
        self.http = HttpInteractions(self)

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> FakeDiscord:
        app = web.Application(client_max_size=32 * 1024 * 1024)
        app.router.add_get("/gateway", self._gateway)
        if self.control:
            from tests.adapters.discord.fake_control import add_control_routes

            add_control_routes(app, self)
        app.router.add_route("*", "/api/v10/{path:.*}", self._rest)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        server = site._server
        assert server is not None and server.sockets  # type: ignore[attr-defined]
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.close()
        for ws, _, _ in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    # -- driving the bot -----------------------------------------------------------------

    async def wait_identified(self, timeout: float = 10) -> None:
        await asyncio.wait_for(self._identified.wait(), timeout)

    async def dispatch(self, event: str, data: Json) -> float:
        """Send a gateway dispatch to the shard that owns the guild (in HTTP mode, an
        interaction is POSTed to the bot instead, in the background); returns the send
        time."""
        if event == "INTERACTION_CREATE":
            self.interactions[data["id"]] = self.interaction_record(data)
            if self.http.endpoint is not None:
                return self.http.deliver(data)
        return await self.send_frame(event, data)

    def interaction_record(self, data: Json) -> Interaction:
        """What the fake keeps of an interaction it sends (to take its answers)."""
        return Interaction(
            data["id"], data["token"], data["type"], data["channel_id"], time.monotonic()
        )

    async def send_frame(self, event: str, data: Any) -> float:
        """Any dispatch, even one Discord would never send (malformed payloads)."""
        ws = self.socket_for(data.get("guild_id") if isinstance(data, dict) else None)
        frame = json.dumps({"op": 0, "t": event, "s": next(self._seq), "d": data})
        at = time.monotonic()
        await ws.send_str(frame)
        return at

    async def click(self, message_id: str, custom_id: str, **kw: Any) -> Json:
        payload = self.click_payload(message_id, custom_id, **kw)
        await self.dispatch("INTERACTION_CREATE", payload)
        return payload

    async def command(
        self, sub: str, options: dict[str, Any] | None = None, *, itype: int = 2, **kw: Any
    ) -> Json:
        """``/quiz <sub> name:value …``; ``focused`` marks the option being autocompleted."""
        focused = kw.pop("focused", None)
        opts = [
            {"name": k, "type": 3, "value": v, **({"focused": True} if k == focused else {})}
            for k, v in (options or {}).items()
        ]
        data = {
            "id": self._command_id(),
            "name": "quiz",
            "type": 1,
            "guild_id": self.guild_id,
            "options": [{"name": sub, "type": 1, "options": opts}],
        }
        payload = self.interaction(itype, data, user_id=kw.pop("user_id", "9001"), **kw)
        await self.dispatch("INTERACTION_CREATE", payload)
        return payload

    def _command_id(self) -> str:
        return next((c["id"] for c in self.commands if c["name"] == "quiz"), "1")

    # -- failure injection ---------------------------------------------------------------

    def rate_limit(
        self, method: str, path: str, *, times: int = 1, retry_after: float = 0.05
    ) -> None:
        body = {"message": "You are being rate limited.", "retry_after": retry_after}
        headers = {
            "Via": "1.1 google",
            "Retry-After": str(max(1, round(retry_after))),
            "X-RateLimit-Limit": "5",
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset-After": str(retry_after),
            "X-RateLimit-Bucket": "fakebucket",
            "X-RateLimit-Scope": "user",
        }
        self._inject(
            method, path, times, lambda: json_response({**body, "global": False}, 429, headers)
        )

    def fail(self, method: str, path: str, status: int, code: int, *, times: int = 1) -> None:
        body = {"message": f"fake error {code}", "code": code}
        self._inject(method, path, times, lambda: json_response(body, status))

    def fail_text(
        self,
        method: str,
        path: str,
        status: int,
        text: str,
        *,
        headers: dict[str, str] | None = None,
        times: int = 1,
    ) -> None:
        """An answer that is not Discord's JSON (a proxy, Cloudflare, an outage page)."""
        self._inject(
            method, path, times, lambda: web.Response(text=text, status=status, headers=headers)
        )

    def _inject(
        self, method: str, path: str, times: int, respond: Callable[[], web.Response]
    ) -> None:
        self._injected.append(_Injected(method, re.compile(path), times, respond))

    # -- assertions ----------------------------------------------------------------------

    def of(self, method: str, path: str) -> list[Call]:
        pattern = re.compile(path)
        return [c for c in self.calls if c.method == method and pattern.fullmatch(c.path)]

    async def wait_for(
        self, method: str, path: str, count: int = 1, *, timeout: float = 10
    ) -> list[Call]:
        """Until `count` calls matched (polled on every recorded call, never on a timer)."""

        async def enough() -> list[Call]:
            async with self._changed:
                await self._changed.wait_for(lambda: len(self.of(method, path)) >= count)
            return self.of(method, path)

        try:
            return await asyncio.wait_for(enough(), timeout)
        except TimeoutError:
            seen = [f"{c.method} {c.path} {c.status}" for c in self.calls]
            raise AssertionError(f"no {count}× {method} {path} within {timeout}s; {seen}") from None

    async def until(self, predicate: Callable[[], bool], *, timeout: float = 10) -> None:
        """Until `predicate()` holds, re-checked on every recorded call."""

        async def holds() -> None:
            async with self._changed:
                await self._changed.wait_for(predicate)

        try:
            await asyncio.wait_for(holds(), timeout)
        except TimeoutError:
            seen = [f"{c.method} {c.path} {c.status}" for c in self.calls]
            raise AssertionError(f"condition not met within {timeout}s; calls: {seen}") from None

    def callbacks(self, interaction: Json) -> list[Call]:
        return self.of("POST", f"/interactions/{interaction['id']}/{interaction['token']}/callback")

    def said_to(self, interaction: Json) -> list[Json]:
        """Everything the bot said in answer to an interaction, in order: the callback's
        message, follow-ups, and edits of @original as the message stands after the edit
        (an edit replacing a deferral's "thinking…" keeps its ephemeral flag)."""
        token = interaction["token"]
        webhook = f"/webhooks/{self.app_id}/{token}"
        out: list[Json] = []
        for c in self.calls:
            if c.status >= 300:
                continue
            if c.path == f"/interactions/{interaction['id']}/{token}/callback":
                if c.json.get("type") in (4, 7):
                    out.append(c.json.get("data") or {})
            elif (c.path == webhook or c.path.startswith(webhook + "/")) and c.method in (
                "POST",
                "PATCH",
            ):
                out.append(c.result if c.result is not None else (c.json or {}))
        return out

    # -- gateway -------------------------------------------------------------------------

    def socket_for(self, guild_id: str | None) -> web.WebSocketResponse:
        for ws, shard, count in reversed(self._sockets):
            if guild_id is None or (int(guild_id) >> 22) % count == shard:
                return ws
        raise AssertionError("no gateway connection for this guild")

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": HEARTBEAT_MS}}))
        entry: tuple[web.WebSocketResponse, int, int] | None = None
        try:
            async for msg in ws:
                if msg.type is not WSMsgType.TEXT:
                    continue
                frame = json.loads(msg.data)
                op = frame.get("op")
                if op == 1:
                    await ws.send_str(json.dumps({"op": 11}))
                elif op == 2:
                    shard, count = frame["d"].get("shard") or [0, 1]
                    self.identifies.append(frame["d"])
                    entry = (ws, shard, count)
                    self._sockets.append(entry)
                    await self._ready(ws, shard, count)
                    self._identified.set()
                elif op == 6:
                    entry = (ws, 0, 1)
                    self._sockets.append(entry)
                    await ws.send_str(
                        json.dumps({"op": 0, "t": "RESUMED", "s": next(self._seq), "d": {}})
                    )
        finally:
            if entry in self._sockets:
                self._sockets.remove(entry)
        return ws

    async def _ready(self, ws: web.WebSocketResponse, shard: int, count: int) -> None:
        mine = (int(self.guild_id) >> 22) % count == shard
        ready = {
            "v": 10,
            "user": self.bot,
            "guilds": [{"id": self.guild_id, "unavailable": True}] if mine else [],
            "session_id": f"session-{shard}",
            "resume_gateway_url": self.gateway_url,
            "application": {"id": self.app_id, "flags": 0},
            "shard": [shard, count],
        }
        await ws.send_str(json.dumps({"op": 0, "t": "READY", "s": next(self._seq), "d": ready}))
        if mine:
            frame = {"op": 0, "t": "GUILD_CREATE", "s": next(self._seq), "d": self.guild()}
            await ws.send_str(json.dumps(frame))

    # -- REST ----------------------------------------------------------------------------

    async def _rest(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["path"]
        body, files = await _read_body(request)
        call = Call(request.method, path, dict(request.query), body, files, time.monotonic())
        response = self._injected_response(request.method, path)
        if response is None:
            response = self.routed(request.method, path, body, files, call)
        await self.record(call, response.status)
        return response

    def routed(
        self, method: str, path: str, body: Any, files: list[tuple[str, int]], call: Call
    ) -> web.Response:
        try:
            return self._route(method, path, body or {}, files, call)
        except _Error as err:
            return json_response({"message": err.message, "code": err.code}, err.status)

    async def record(self, call: Call, status: int) -> None:
        call.status = status
        self.calls.append(call)
        async with self._changed:
            self._changed.notify_all()

    def _injected_response(self, method: str, path: str) -> web.Response | None:
        for inj in self._injected:
            if inj.times > 0 and inj.method == method and inj.pattern.fullmatch(path):
                inj.times -= 1
                return inj.respond()
        return None

    def _route(
        self, method: str, path: str, body: Any, files: list[tuple[str, int]], call: Call
    ) -> web.Response:
        parts = path.strip("/").split("/")
        if method == "GET" and path == "/users/@me":
            return json_response(self.bot)
        if method == "GET" and path == "/oauth2/applications/@me":
            return json_response(self.application())
        if method == "GET" and path in ("/gateway", "/gateway/bot"):
            return json_response(self._gateway_info())
        if method == "PUT" and parts[0] == "applications" and parts[-1] == "commands":
            self.commands = [self.command_record(c) for c in body]
            return json_response(self.commands)
        if method == "POST" and parts[0] == "interactions" and parts[-1] == "callback":
            return self._callback(parts[1], parts[2], body, "with_response" in call.query)
        if parts[0] == "webhooks":
            return self._webhook(method, parts[2], parts[3:], body, call)
        if method == "POST" and path == "/users/@me/channels":
            recipient = user(str(body["recipient_id"]))
            dm = {"id": self.snowflake(), "type": 1, "recipients": [recipient]}
            return json_response(dm)
        if parts[0] == "channels" and len(parts) >= 3 and parts[2] == "messages":
            return self._channel_messages(method, parts[1], parts[3:], body, files)
        raise _Error(404, 0, "404: Not Found")

    def _gateway_info(self) -> Json:
        return {
            "url": self.gateway_url,
            "shards": 1,
            "session_start_limit": {
                "total": 1000,
                "remaining": 1000,
                "reset_after": 0,
                "max_concurrency": 1,
            },
        }

    def _callback(self, iid: str, token: str, body: Json, with_response: bool) -> web.Response:
        """An initial response (POSTed in gateway mode; in HTTP mode, the answer to the
        request, recorded the same way by `fake_http`)."""
        inter = self.interactions.get(iid)
        if inter is None or inter.token != token:
            raise _Error(404, 10062, "Unknown interaction")
        if inter.responded:
            raise _Error(400, 40060, "Interaction has already been acknowledged.")
        inter.responded = True
        rtype = body["type"]
        data = body.get("data") or {}
        info: Json = {"id": iid, "type": inter.type}
        result: Json = {"interaction": info}
        if rtype in (4, 5):
            flags = int(data.get("flags") or 0) | (LOADING if rtype == 5 else 0)
            msg = self.message(inter.channel_id, data, flags=flags, msg_type=20)
            msg["interaction_metadata"] = {"id": iid, "type": inter.type, "user": self.bot}
            inter.original = msg
            self.messages[msg["id"]] = msg
            info["response_message_id"] = msg["id"]
            info["response_message_loading"] = rtype == 5
            info["response_message_ephemeral"] = bool(flags & EPHEMERAL)
            result["resource"] = {"type": rtype, "message": msg}
        if not with_response:
            return web.Response(status=204)
        return json_response(result)

    def _webhook(
        self, method: str, token: str, rest: list[str], body: Any, call: Call
    ) -> web.Response:
        inter = next((i for i in self.interactions.values() if i.token == token), None)
        if inter is None:
            raise _Error(404, 10015, "Unknown Webhook")
        if not rest and method == "POST":
            msg = self.message(inter.channel_id, body or {})
            self.messages[msg["id"]] = msg
            return json_response(msg)
        if len(rest) == 2 and rest[0] == "messages":
            target = inter.original if rest[1] == "@original" else self.messages.get(rest[1])
            if target is None:
                raise _Error(404, 10008, "Unknown Message")
            if method == "GET":
                return json_response(target)
            if method == "PATCH":
                target.update({k: v for k, v in (body or {}).items() if k != "attachments"})
                target["flags"] = int(target.get("flags") or 0) & ~LOADING
                call.result = dict(target)
                return json_response(target)
            if method == "DELETE":
                self.messages.pop(target["id"], None)
                if rest[1] == "@original":
                    inter.original = None
                return web.Response(status=204)
        raise _Error(404, 0, "404: Not Found")

    def _channel_messages(
        self, method: str, channel: str, rest: list[str], body: Any, files: list[tuple[str, int]]
    ) -> web.Response:
        if not rest and method == "POST":
            msg = self.message(channel, body or {})
            msg["attachments"] = [
                {
                    "id": self.snowflake(),
                    "filename": name,
                    "size": size,
                    "url": f"https://cdn.fake/{name}",
                    "proxy_url": f"https://cdn.fake/{name}",
                }
                for name, size in files
            ]
            self.messages[msg["id"]] = msg
            return json_response(msg)
        message = self.messages.get(rest[0]) if rest else None
        if message is None or message["channel_id"] != channel:
            raise _Error(404, 10008, "Unknown Message")
        if len(rest) == 1 and method == "GET":
            return json_response(message)
        if len(rest) == 1 and method == "PATCH":
            message.update({k: v for k, v in (body or {}).items() if k != "attachments"})
            message["edited_timestamp"] = now()
            return json_response(message)
        if len(rest) == 2 and rest[1] == "threads" and method == "POST":
            if message["id"] in self.threads:
                raise _Error(400, 160004, "A thread has already been created for this message")
            thread = {
                **self.channel(message["id"]),
                "type": 11,
                "parent_id": channel,
                "name": body["name"],
                "owner_id": self.app_id,
                "message_count": 0,
                "member_count": 1,
                "flags": 0,
                "thread_metadata": {
                    "archived": False,
                    "auto_archive_duration": body.get("auto_archive_duration", 1440),
                    "archive_timestamp": now(),
                    "locked": False,
                },
            }
            self.threads[message["id"]] = thread
            return json_response(thread)
        raise _Error(404, 0, "404: Not Found")


class _Error(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def json_response(
    data: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    # Exactly "application/json": discord.py does not decode "application/json; charset=…".
    return web.Response(
        body=json.dumps(data).encode(),
        status=status,
        headers={**(headers or {}), "Content-Type": "application/json"},
    )


async def _read_body(request: web.Request) -> tuple[Any, list[tuple[str, int]]]:
    if request.content_type.startswith("multipart/"):
        body: Any = None
        files: list[tuple[str, int]] = []
        reader = await request.multipart()
        async for part in reader:
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "payload_json":
                body = json.loads(await part.text())
            else:
                data = await part.read()
                files.append((part.filename or "", len(data)))
        return body, files
    if request.can_read_body:
        raw = await request.read()
        return (json.loads(raw) if raw else None), []
    return None, []
