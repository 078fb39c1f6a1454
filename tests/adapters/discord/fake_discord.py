"""A fake Discord on 127.0.0.1: the REST API and the gateway WebSocket, enough of both for
the real discord.py client to log in, sync commands, receive interactions and answer them.

Every REST call is recorded (`calls`); tests push gateway dispatches (`dispatch`,
`click`, `command`, `autocomplete`) and assert on what the bot called. Failures are
injected per route: `rate_limit` (a 429 with the ``Via`` header discord.py requires before
it retries) and `fail` (403/404 with a Discord error code).

Wire details discord.py depends on: JSON responses carry exactly ``Content-Type:
application/json``; gateway frames are text (no zlib stream); members have ``flags``.

Payload shapes live in `fake_payloads`, the REST resources in `fake_rest`, Discord's side
of HTTP interactions in `fake_http`; for the benchmark the fake runs in its own process,
driven over HTTP (`fake_control`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import WSMsgType, web

from bot.lifecycle import Lifecycle
from tests.adapters.discord.fake_http import HttpInteractions
from tests.adapters.discord.fake_oauth import DiscordOAuth
from tests.adapters.discord.fake_payloads import (
    BOT_PERMISSIONS,
    EPHEMERAL,
    MEMBER_PERMISSIONS,
    Json,
    option_type,
)
from tests.adapters.discord.fake_rest import (
    Call,
    Interaction,
    RestRoutes,
    RouteError,
    json_response,
    read_body,
)
from tests.polling import WAIT, Changes

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
class _Injected:
    method: str
    pattern: re.Pattern[str]
    times: int
    respond: Callable[[], web.Response]


class FakeDiscord(RestRoutes, Lifecycle):
    def __init__(self, *, port: int = 0, control: bool = False, **ids: Any) -> None:
        super().__init__(**ids)
        self.port = port
        self.control = control  # the /_fake/* routes of fake_control (benchmark)
        self.calls: list[Call] = []
        self.identifies: list[Json] = []
        self.threads: dict[str, Json] = {}  # thread id (== its message id) -> channel
        self.interactions: dict[str, Interaction] = {}
        self.commands: list[Json] = []
        self.files: dict[str, bytes] = {}  # attachment id -> its bytes
        self.downloads: list[str] = []  # attachment ids, as fetched
        self.dms: dict[str, str] = {}  # user id -> the bot's DM channel with them
        self.closed_dms: set[str] = set()  # users who take no DMs from the server's members
        self.role_members: dict[str, list[str]] = {}  # role id -> user ids
        self.members_intent = True
        self._seq = itertools.count(1)
        self._sockets: list[tuple[web.WebSocketResponse, int, int]] = []  # ws, shard, count
        self._injected: list[_Injected] = []
        self._changes = Changes()
        self._identified = asyncio.Event()
        self._runner: web.AppRunner | None = None
        # HTTP mode: interactions are POSTed, signed, to the bot's endpoint (`fake_http`).
        self.http = HttpInteractions(self)
        self.oauth = DiscordOAuth()  # a member's sign-in to the dashboard (OAuth2)
        # The server as the bot reads it (`GET /guilds/{id}`, `.../members/{user}`): its
        # owner, its roles' permissions (the @everyone role's id is the server's) and each
        # member's roles; a user not in `members` is not in the server.
        self.owner_id = "1"
        self.roles: dict[str, int] = {}
        self.members: dict[str, list[str]] = {}

    # -- lifecycle -----------------------------------------------------------------------

    async def initialize(self) -> None:
        app = web.Application(client_max_size=32 * 1024 * 1024)
        app.router.add_get("/gateway", self._gateway)
        app.router.add_get("/attachments/{id}/{name}", self._attachment)
        app.router.add_get("/oauth2/authorize", self.oauth.authorize)
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

    async def shutdown(self) -> None:
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

    async def wait_identified(self, timeout: float = WAIT) -> None:
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
        """``/quiz <sub> name:value …``; ``focused`` marks the option being autocompleted.
        A value's type gives the option's: str 3, int 4, float 10, and an attachment from
        `attach` 11 (resolved in the interaction, as Discord sends it)."""
        focused = kw.pop("focused", None)
        opts: list[Json] = []
        attachments: dict[str, Json] = {}
        for k, v in (options or {}).items():
            option: Json = {"name": k, "type": option_type(v), "value": v}
            if option["type"] == 11:
                attachments[v["id"]] = v
                option["value"] = v["id"]
            if k == focused:
                option["focused"] = True
            opts.append(option)
        data: Json = {
            "id": self._command_id(),
            "name": "quiz",
            "type": 1,
            "guild_id": self.guild_id,
            "options": [{"name": sub, "type": 1, "options": opts}],
        }
        if attachments:
            data["resolved"] = {"attachments": attachments}
        payload = self.interaction(itype, data, user_id=kw.pop("user_id", "9001"), **kw)
        await self.dispatch("INTERACTION_CREATE", payload)
        return payload

    async def submit_modal(
        self, custom_id: str, values: dict[str, str], *, user_id: str, **kw: Any
    ) -> Json:
        """A member submits the modal `custom_id` with `values` (text input id -> text)."""
        rows = [
            {"type": 1, "components": [{"type": 4, "custom_id": k, "value": v}]}
            for k, v in values.items()
        ]
        data = {"custom_id": custom_id, "components": rows}
        payload = self.interaction(5, data, user_id=user_id, **kw)
        await self.dispatch("INTERACTION_CREATE", payload)
        return payload

    def modal_of(self, interaction: Json) -> Json | None:
        """The form the bot opened in answer to `interaction` (None: it did not)."""
        record = self.interactions.get(interaction["id"])
        return record.modal if record is not None else None

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
        self, method: str, path: str, count: int = 1, *, timeout: float = WAIT
    ) -> list[Call]:
        """Until `count` calls matched (re-checked on every recorded call)."""
        await self.until(
            lambda: len(self.of(method, path)) >= count,
            timeout=timeout,
            what=f"{count}× {method} {path}",
        )
        return self.of(method, path)

    async def until(
        self, predicate: Callable[[], bool], *, timeout: float = WAIT, what: str | None = None
    ) -> None:
        """Until `predicate()` holds, re-checked on every recorded call."""
        await self._changes.until(predicate, timeout=timeout, what=what, detail=self._seen)

    def _seen(self) -> str:
        return f"calls: {[f'{c.method} {c.path} {c.status}' for c in self.calls]}"

    def callbacks(self, interaction: Json) -> list[Call]:
        return self.of("POST", f"/interactions/{interaction['id']}/{interaction['token']}/callback")

    def settled(self, interaction: Json) -> bool:
        """The bot is done answering `interaction`: a callback other than a deferral
        ("thinking…", type 5), a callback that failed (nothing follows it), or the deferral
        edited or deleted."""
        if any(
            c.status >= 300 or (c.json or {}).get("type") != 5 for c in self.callbacks(interaction)
        ):
            return True
        original = f"/webhooks/{self.app_id}/{interaction['token']}/messages/@original"
        return any(c.path == original and c.method in ("PATCH", "DELETE") for c in self.calls)

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
        auth = request.headers.get("Authorization", "")
        if path == "/oauth2/token" or auth.startswith("Bearer "):
            return await self._oauth(request, path, auth)
        body, uploaded = await read_body(request)
        files = [(name, len(data)) for name, data in uploaded]
        call = Call(request.method, path, dict(request.query), body, files, at=time.monotonic())
        call.contents = [data for _, data in uploaded]
        response = self._injected_response(request.method, path)
        if response is None:
            response = self.routed(request.method, path, body, files, call)
        await self.record(call, response.status)
        return response

    async def _oauth(self, request: web.Request, path: str, auth: str) -> web.Response:
        """The OAuth2 token exchange and the signed-in user's own routes."""
        if path == "/oauth2/token":
            if request.content_type != "application/x-www-form-urlencoded":
                status, body = 400, {"error": "invalid_request"}  # Discord takes forms only
            else:
                status, body = self.oauth.token(await request.read(), auth)
        else:
            status, body = self.oauth.user_route(request.method, path, auth.removeprefix("Bearer "))
        call = Call(request.method, path, dict(request.query), None, at=time.monotonic())
        await self.record(call, status)
        return json_response(body, status)

    def routed(
        self, method: str, path: str, body: Any, files: list[tuple[str, int]], call: Call
    ) -> web.Response:
        try:
            return self._route(method, path, body or {}, files, call)
        except RouteError as err:
            return json_response({"message": err.message, "code": err.code}, err.status)

    async def record(self, call: Call, status: int) -> None:
        call.status = status
        self.calls.append(call)
        await self._changes.notify()

    def _injected_response(self, method: str, path: str) -> web.Response | None:
        for inj in self._injected:
            if inj.times > 0 and inj.method == method and inj.pattern.fullmatch(path):
                inj.times -= 1
                return inj.respond()
        return None
