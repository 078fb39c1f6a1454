"""A fake Slack on 127.0.0.1: the Web API methods the adapter calls, `response_url`s, file
uploads and a Socket Mode WebSocket, speaking Slack's wire formats to the real
`slack_sdk`/`slack_bolt` clients.

Arguments are merged from the query string, a form body and a JSON body (slack_sdk sends
`chat.*` as JSON and `params=` methods as a query string). Every call is recorded; tests
wait on the record with `wait_until` (`tests.polling.eventually`, woken on every
change, with a deadline) and never sleep.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from bot.lifecycle import Lifecycle
from tests.adapters.slack.block_kit import block_kit_problems
from tests.adapters.slack.fake_oidc import SlackOidc
from tests.polling import WAIT, Changes

BOT_TOKEN = "xoxb-fake-bot-token"
APP_TOKEN = "xapp-fake-app-token"
TEAM = "T0FAKE"
BOT_USER = "UQUIZBOT"

_APP_TOKEN_METHODS = {"apps.connections.open"}
_BLOCK_METHODS = {"chat.postMessage", "chat.postEphemeral", "chat.update"}


@dataclass(slots=True)
class Call:
    method: str  # a Web API method, "upload" (the bytes) or "response_url"
    args: dict[str, Any]
    token: str | None = None
    status: int = 200
    response: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == 200 and bool(self.response.get("ok", True))

    @property
    def text(self) -> str:
        """All the text a user would read: `text` and every block's text."""
        parts = [str(self.args.get("text", ""))]
        for block in self.args.get("blocks") or []:
            if "text" in block:
                parts.append(block["text"]["text"])
            parts += [f["text"] for f in block.get("fields", [])]
            parts += [
                e["text"] for e in block.get("elements", []) if isinstance(e.get("text"), str)
            ]
        return "\n".join(parts)

    @property
    def action_ids(self) -> list[str]:
        return [
            e["action_id"]
            for b in self.args.get("blocks") or []
            if b.get("type") == "actions"
            for e in b["elements"]
        ]


class FakeSlack(Lifecycle):
    def __init__(
        self,
        *,
        bot_token: str = BOT_TOKEN,
        app_token: str = APP_TOKEN,
        team: str = TEAM,
        bot_user: str = BOT_USER,
    ) -> None:
        self.bot_token = bot_token
        self.app_token = app_token
        self.team = team
        self.bot_user = bot_user
        self.calls: list[Call] = []
        self.users: dict[str, dict[str, Any]] = {}
        self.usergroups: dict[str, list[str]] = {}  # user group id -> its members
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.uploads: dict[str, bytes] = {}
        self.shared: dict[str, bytes] = {}  # files members shared (url_private), by id
        self.acks: list[dict[str, Any]] = []
        self.views: list[dict[str, Any]] = []  # modals opened (views.open)
        # App Home tabs (views.publish): user -> (the view as published, its hash).
        self.homes: dict[str, tuple[dict[str, Any], str]] = {}
        self.home_publishes: list[tuple[str, float]] = []  # (user, loop time) per publish
        self.not_in: set[str] = set()  # channels where chat.postMessage says not_in_channel
        self._rate_limits: dict[str, list[int]] = {}
        self._failures: dict[str, list[str]] = {}
        # method -> (status, body, content type) answered while the method is "down".
        self.outages: dict[str, tuple[int, str, str]] = {}
        self._ts = itertools.count(1)
        self._ids = itertools.count(1)
        self._sockets: list[web.WebSocketResponse] = []
        self._changes: Changes | None = None
        self._runner: web.AppRunner | None = None
        self._basic = ("", "")
        self.port = 0
        self.oidc = SlackOidc()  # Sign in with Slack (OpenID Connect)
        # Many workspaces (OAuth installs): each bot token belongs to one team, each
        # registered channel to one team; a call whose token's team is not the channel's
        # is refused and recorded in `violations`.
        self.team_tokens: dict[str, str] = {}  # bot token -> its team (or enterprise)
        self.channel_teams: dict[str, str] = {}  # channel -> its team
        self.violations: list[Call] = []
        self.refused_tokens: dict[str, str] = {}  # revoked bot token -> the error answered
        self.client_id = "1111.2222"
        self.client_secret = "fake-client-secret"
        self.oauth_codes: dict[str, dict[str, Any]] = {}  # code -> the install it grants
        self.refresh_tokens: dict[str, str] = {}  # live refresh token -> its team
        self.refreshed: list[str] = []  # teams whose token was refreshed, in order
        self.expires_in = 43200

    # -- lifecycle ---------------------------------------------------------------------

    async def initialize(self) -> None:
        self._changes = Changes()
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_get("/files/{file_id}/{name}", self._shared_file)
        app.router.add_post("/response/{name}", self._response_url)
        app.router.add_get("/socket", self._socket)
        app.router.add_get("/openid/connect/authorize", self.oidc.authorize)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

    async def shutdown(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def response_url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/response/{name}"

    # -- scripting ---------------------------------------------------------------------

    def rate_limit(self, method: str, retry_after: int = 1, times: int = 1) -> None:
        """The next `times` calls of `method` answer 429 with ``Retry-After``."""
        self._rate_limits.setdefault(method, []).extend([retry_after] * times)

    def fail(self, method: str, error: str, times: int = 1) -> None:
        """The next `times` calls of `method` answer ``{"ok": false, "error": error}``."""
        self._failures.setdefault(method, []).extend([error] * times)

    def outage(
        self, method: str, status: int = 500, body: str = "", content_type: str = "text/html"
    ) -> None:
        """Until `restore(method)`, every call of `method` answers `status` with a body that
        is not Slack's JSON (an HTML error page, plain text, or nothing)."""
        self.outages[method] = (status, body, content_type)

    def restore(self, method: str) -> None:
        self.outages.pop(method, None)

    def add_user(self, user_id: str, *, admin: bool = False, owner: bool = False) -> None:
        self.users[user_id] = {
            "id": user_id,
            "team_id": self.team,
            "name": user_id.lower(),
            "is_admin": admin,
            "is_owner": owner,
            "is_primary_owner": False,
            "tz": "Europe/Athens",
        }

    def share_file(
        self, name: str, data: bytes, *, user: str, channel: str = "D0DM", size: int | None = None
    ) -> dict[str, Any]:
        """A member sends the bot a file in a direct message: the Events API body Slack
        would post (``message``/``file_share``), the bytes behind its ``url_private``."""
        file_id = f"F{next(self._ids):08d}"
        self.shared[file_id] = data
        url = f"http://127.0.0.1:{self.port}/files/{file_id}/{name}"
        event = {
            "type": "message",
            "subtype": "file_share",
            "channel": channel,
            "channel_type": "im",
            "user": user,
            "text": "",
            "ts": self._next_ts(),
            "files": [
                {
                    "id": file_id,
                    "name": name,
                    "size": len(data) if size is None else size,
                    "mimetype": "text/plain",
                    "url_private": url,
                    "url_private_download": url + "?download=1",
                }
            ],
        }
        return self._event_callback(event)

    def _event_callback(self, event: dict[str, Any]) -> dict[str, Any]:
        """The Events API body Slack posts for `event`."""
        return {
            "token": "legacy",
            "team_id": self.team,
            "api_app_id": "A0FAKE",
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev{uuid.uuid4().hex[:12].upper()}",  # unique across tests
            "event_time": 1700000000,
        }

    # -- many workspaces ---------------------------------------------------------------

    def add_workspace(self, team: str, token: str, channels: tuple[str, ...] = ()) -> None:
        """Workspace `team`, installed with bot `token`, owning `channels`."""
        self.team_tokens[token] = team
        for channel in channels:
            self.channel_teams[channel] = team

    def revoke(self, team: str, error: str = "invalid_auth") -> None:
        """Every token of `team` stops working (an uninstall, revoked tokens): a call with
        one is answered `error` (``invalid_auth``, ``token_revoked``)."""
        for token, owner in list(self.team_tokens.items()):
            if owner == team:
                del self.team_tokens[token]
                self.refused_tokens[token] = error
        for refresh, owner in list(self.refresh_tokens.items()):
            if owner == team:
                del self.refresh_tokens[refresh]

    def grant(
        self,
        team: str | None,
        *,
        enterprise: str | None = None,
        rotating: bool = False,
        user: str = "UINSTALLER",
        channels: tuple[str, ...] = (),
    ) -> str:
        """A member approves the install in Slack's page: the code `oauth.v2.access`
        exchanges (an organisation-wide install when `team` is None)."""
        code = f"code-{next(self._ids)}"
        self.oauth_codes[code] = {
            "team": team,
            "enterprise": enterprise,
            "rotating": rotating,
            "user": user,
            "channels": channels,
        }
        return code

    def _issue(self, owner: str, rotating: bool) -> dict[str, Any]:
        token = f"xoxb-{owner}-{next(self._ids)}"
        self.team_tokens[token] = owner
        out: dict[str, Any] = {"access_token": token, "token_type": "bot"}
        if rotating:
            refresh = f"xoxe-1-{owner}-{next(self._ids)}"
            self.refresh_tokens[refresh] = owner
            out |= {"refresh_token": refresh, "expires_in": self.expires_in}
        return out

    def _m_oauth_v2_access(self, args: dict[str, Any], basic: tuple[str, str]) -> dict[str, Any]:
        client_id = args.get("client_id") or basic[0]
        secret = args.get("client_secret") or basic[1]
        if (client_id, secret) != (self.client_id, self.client_secret):
            return {"ok": False, "error": "invalid_client_id"}
        if args.get("grant_type") == "refresh_token":
            owner = self.refresh_tokens.pop(str(args.get("refresh_token", "")), None)
            if owner is None:  # used already (a refresh is single use), or revoked
                return {"ok": False, "error": "invalid_refresh_token"}
            self.refreshed.append(owner)
            return {"ok": True, **self._issue(owner, rotating=True)}
        grant = self.oauth_codes.pop(str(args.get("code", "")), None)
        if grant is None:
            return {"ok": False, "error": "invalid_code"}
        team, enterprise = grant["team"], grant["enterprise"]
        owner = team or enterprise
        for channel in grant["channels"]:
            self.channel_teams[channel] = owner
        return {
            "ok": True,
            **self._issue(owner, grant["rotating"]),
            "scope": "commands,chat:write",
            "bot_user_id": self.bot_user,
            "app_id": "A0FAKE",
            "team": {"id": team, "name": f"Team {team}"} if team else None,
            "enterprise": {"id": enterprise, "name": f"Org {enterprise}"} if enterprise else None,
            "is_enterprise_install": team is None,
            "authed_user": {"id": grant["user"], "scope": "", "token_type": "user"},
        }

    def home_opened(
        self, user: str, *, tab: str = "home", view_hash: str | None = None
    ) -> dict[str, Any]:
        """A member opens the app's Home tab: the Events API body Slack would post
        (``app_home_opened``, with the tab's current view and its hash once published)."""
        event: dict[str, Any] = {
            "type": "app_home_opened",
            "user": user,
            "channel": f"D{user}",
            "tab": tab,
            "event_ts": self._next_ts(),
        }
        if user in self.homes:
            view, current = self.homes[user]
            event["view"] = {**view, "id": f"V{user}", "hash": view_hash or current}
        return self._event_callback(event)

    def touch_home(self, user: str) -> None:
        """Someone else published `user`'s home meanwhile: the hash the bot holds is stale."""
        view, _ = self.homes.get(user, ({"type": "home", "blocks": []}, ""))
        self.homes[user] = (view, f"h{next(self._ids)}")

    def home_text(self, user: str) -> str:
        """All the text of `user`'s published Home tab."""
        view, _ = self.homes[user]
        return Call("views.publish", {"blocks": view.get("blocks", [])}).text

    # -- reading the record ------------------------------------------------------------

    def calls_to(self, *methods: str, ok_only: bool = True) -> list[Call]:
        return [c for c in self.calls if c.method in methods and (c.ok or not ok_only)]

    async def wait_until(self, predicate: Callable[[], bool], timeout: float = WAIT) -> None:
        """Wait until `predicate()` holds, re-checked after every recorded change."""
        assert self._changes is not None
        await self._changes.until(predicate, timeout=timeout, detail=self._seen)

    def _seen(self) -> str:
        summary = [(c.method, c.status, c.response.get("error")) for c in self.calls]
        return f"calls: {summary}"

    async def wait_for_calls(
        self, method: str, count: int = 1, timeout: float = WAIT
    ) -> list[Call]:
        await self.wait_until(lambda: len(self.calls_to(method)) >= count, timeout)
        return self.calls_to(method)

    async def _notify(self) -> None:
        assert self._changes is not None
        await self._changes.notify()

    # -- Socket Mode -------------------------------------------------------------------

    @property
    def open_connections(self) -> int:
        return sum(not ws.closed for ws in self._sockets)

    async def wait_connected(self, timeout: float = WAIT) -> None:
        await self.wait_until(lambda: self.open_connections > 0, timeout)

    async def push(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        envelope_id: str | None = None,
        retry_attempt: int | None = None,
        retry_reason: str | None = None,
    ) -> str:
        """Send an envelope (``slash_commands``, ``interactive``, ``events_api``) to the
        connected app; returns its envelope id."""
        envelope_id = envelope_id or f"env-{next(self._ids)}"
        envelope: dict[str, Any] = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": kind != "events_api",
        }
        if retry_attempt is not None:
            envelope["retry_attempt"] = retry_attempt
            envelope["retry_reason"] = retry_reason or "timeout"
        live = [ws for ws in self._sockets if not ws.closed]
        assert live, "no Socket Mode connection"
        await live[-1].send_str(json.dumps(envelope))
        return envelope_id

    async def wait_for_ack(self, envelope_id: str, timeout: float = WAIT) -> dict[str, Any]:
        await self.wait_until(
            lambda: any(a["envelope_id"] == envelope_id for a in self.acks), timeout
        )
        return next(a for a in self.acks if a["envelope_id"] == envelope_id)

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._sockets.append(ws)
        await ws.send_str(
            json.dumps(
                {
                    "type": "hello",
                    "num_connections": len(self._sockets),
                    "debug_info": {"host": "fake-slack", "approximate_connection_time": 3600},
                    "connection_info": {"app_id": "AFAKE"},
                }
            )
        )
        await self._notify()
        async for msg in ws:
            if msg.type == WSMsgType.TEXT:
                data = json.loads(msg.data)
                if "envelope_id" in data:
                    self.acks.append(data)
                    await self._notify()
        await self._notify()
        return ws

    # -- HTTP endpoints ----------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            args.update(await request.json())
        elif request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
            args.update({k: v for k, v in (await request.post()).items() if isinstance(v, str)})
        for key in ("blocks", "files"):
            if isinstance(args.get(key), str):
                args[key] = json.loads(args[key])
        auth = request.headers.get("Authorization", "")
        token = (
            auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else args.pop("token", None)
        )
        basic = auth.removeprefix("Basic ") if auth.startswith("Basic ") else ""
        pair = base64.b64decode(basic).decode().split(":", 1) if basic else ["", ""]
        self._basic = (pair[0], pair[-1])
        call = Call(method, args, token)
        self.calls.append(call)
        try:
            if (down := self.outages.get(method)) is not None:
                call.status = down[0]
                return web.Response(status=down[0], text=down[1], content_type=down[2])
            if (waits := self._rate_limits.get(method)) and waits:
                call.status = 429
                call.response = {"ok": False, "error": "ratelimited"}
                return web.json_response(
                    call.response, status=429, headers={"Retry-After": str(waits.pop(0))}
                )
            call.response = self._answer(method, args, token)
            return web.json_response(call.response)
        finally:
            await self._notify()

    def _answer(self, method: str, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        if method == "openid.connect.token":  # client credentials, no token
            return self.oidc.token(args)
        if method == "openid.connect.userInfo":  # the signed-in user's own token
            return self.oidc.user_info(token)
        if method == "oauth.v2.access":  # client credentials, no token
            return self._m_oauth_v2_access(args, self._basic)
        wanted = self.app_token if method in _APP_TOKEN_METHODS else self.bot_token
        if not token:
            return {"ok": False, "error": "not_authed"}
        owner = self.team_tokens.get(token)
        if token in self.refused_tokens and owner is None:
            return {"ok": False, "error": self.refused_tokens[token]}
        if token != wanted and owner is None:
            return {"ok": False, "error": "invalid_auth"}
        if owner is not None:
            channel = str(args.get("channel", ""))
            user = self.users.get(str(args.get("user", ""))) or {}
            if (
                self.channel_teams.get(channel, owner) != owner
                or user.get("team_id", owner) != owner
            ):
                self.violations.append(Call(method, args, token))
                return {"ok": False, "error": "channel_not_found"}
            if method == "auth.test":
                return {**self._m_auth_test(args), "team_id": owner}
        if (errors := self._failures.get(method)) and errors:
            return {"ok": False, "error": errors.pop(0)}
        if method in _BLOCK_METHODS and "blocks" in args:
            problems = block_kit_problems(args["blocks"], args.get("text"))
            if problems:
                return {"ok": False, "error": "invalid_blocks", "errors": problems}
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return {"ok": False, "error": "unknown_method"}
        result: dict[str, Any] = handler(args)
        return result

    def _next_ts(self) -> str:
        return f"1700000000.{next(self._ts):06d}"

    def _m_auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": "https://fake.slack.test/",
            "team": "Fake Team",
            "user": "quizbot",
            "team_id": self.team,
            "user_id": self.bot_user,
            "bot_id": "BQUIZBOT",
            "is_enterprise_install": False,
        }

    def _m_chat_postMessage(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = args.get("channel")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        if channel in self.not_in:
            return {"ok": False, "error": "not_in_channel"}
        ts = self._next_ts()
        self.messages[(channel, ts)] = dict(args)
        message = {"type": "message", "text": args.get("text", ""), "ts": ts, "user": self.bot_user}
        if "thread_ts" in args:
            message["thread_ts"] = args["thread_ts"]
        return {"ok": True, "channel": channel, "ts": ts, "message": message}

    def _m_chat_postEphemeral(self, args: dict[str, Any]) -> dict[str, Any]:
        if not args.get("channel") or not args.get("user"):
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True, "message_ts": self._next_ts()}

    def _m_chat_update(self, args: dict[str, Any]) -> dict[str, Any]:
        key = (args.get("channel", ""), args.get("ts", ""))
        if key not in self.messages:
            return {"ok": False, "error": "message_not_found"}
        self.messages[key] = {**self.messages[key], **args}
        return {"ok": True, "channel": key[0], "ts": key[1], "text": args.get("text", "")}

    def _m_usergroups_users_list(self, args: dict[str, Any]) -> dict[str, Any]:
        members = self.usergroups.get(args.get("usergroup", ""))
        if members is None:
            return {"ok": False, "error": "no_such_subteam"}
        return {"ok": True, "users": list(members)}

    def _m_users_info(self, args: dict[str, Any]) -> dict[str, Any]:
        user = args.get("user", "")
        if not user:
            return {"ok": False, "error": "user_not_found"}
        info = self.users.get(user) or {"id": user, "name": user.lower(), "is_admin": False}
        return {"ok": True, "user": info}

    def _m_files_getUploadURLExternal(self, args: dict[str, Any]) -> dict[str, Any]:
        if not args.get("filename") or not str(args.get("length", "")).isdigit():
            return {"ok": False, "error": "invalid_arguments"}
        file_id = f"F{next(self._ids):08d}"
        url = f"http://127.0.0.1:{self.port}/upload/{file_id}"
        return {"ok": True, "upload_url": url, "file_id": file_id}

    def _m_files_completeUploadExternal(self, args: dict[str, Any]) -> dict[str, Any]:
        files = args.get("files") or []
        if not files or any(f.get("id") not in self.uploads for f in files):
            return {"ok": False, "error": "file_not_found"}
        return {
            "ok": True,
            "files": [{"id": f["id"], "title": f.get("title", ""), "name": f["id"]} for f in files],
        }

    def _m_views_open(self, args: dict[str, Any]) -> dict[str, Any]:
        view = args.get("view")
        if isinstance(view, str):
            view = json.loads(view)
        if not args.get("trigger_id") or not isinstance(view, dict):
            return {"ok": False, "error": "invalid_arguments"}
        problems = modal_problems(view)
        if problems:
            return {"ok": False, "error": "invalid_arguments", "response_metadata": problems}
        self.views.append(view)
        return {"ok": True, "view": {"id": f"V{next(self._ids)}", **view}}

    def _m_views_publish(self, args: dict[str, Any]) -> dict[str, Any]:
        view = args.get("view")
        if isinstance(view, str):
            view = json.loads(view)
        user = str(args.get("user_id", ""))
        if not user or not isinstance(view, dict):
            return {"ok": False, "error": "invalid_arguments"}
        if view.get("type") != "home":
            return {"ok": False, "error": "invalid_arguments", "response_metadata": ["type"]}
        blocks = view.get("blocks") or []
        problems = block_kit_problems(blocks) if len(blocks) <= 100 else ["over 100 blocks"]
        problems = [p for p in problems if "> 50" not in p]  # a home view takes 100
        if problems:
            return {"ok": False, "error": "invalid_blocks", "errors": problems}
        given = args.get("hash")
        if given is not None and user in self.homes and self.homes[user][1] != given:
            return {"ok": False, "error": "hash_conflict"}
        new_hash = f"h{next(self._ids)}"
        self.homes[user] = (view, new_hash)
        self.home_publishes.append((user, asyncio.get_running_loop().time()))
        return {"ok": True, "view": {"id": f"V{user}", **view, "hash": new_hash}}

    def _m_conversations_open(self, args: dict[str, Any]) -> dict[str, Any]:
        users = str(args.get("users", ""))
        if not users:
            return {"ok": False, "error": "users_list_not_supplied"}
        return {"ok": True, "channel": {"id": f"D{users}"}}

    def _m_apps_connections_open(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket"}

    async def _upload(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        data = await request.read()
        self.uploads[file_id] = data
        self.calls.append(Call("upload", {"file_id": file_id, "size": len(data)}))
        await self._notify()
        return web.Response(text=f"OK - {len(data)}")

    async def _shared_file(self, request: web.Request) -> web.Response:
        """`url_private`: the file with the bot token; without it, Slack's login page."""
        file_id = request.match_info["file_id"]
        auth = request.headers.get("Authorization", "")
        self.calls.append(Call("file", {"file_id": file_id}, auth.removeprefix("Bearer ")))
        await self._notify()
        token = auth.removeprefix("Bearer ")
        known = token == self.bot_token or token in self.team_tokens
        if not auth.startswith("Bearer ") or not known or file_id not in self.shared:
            return web.Response(text="<html>sign in</html>", content_type="text/html")
        return web.Response(body=self.shared[file_id], content_type="application/octet-stream")

    async def _response_url(self, request: web.Request) -> web.Response:
        body = await request.json()
        call = Call("response_url", {**body, "name": request.match_info["name"]})
        self.calls.append(call)
        if (down := self.outages.get("response_url")) is not None:
            call.status = down[0]
            await self._notify()
            return web.Response(status=down[0], text=down[1], content_type=down[2])
        problems = block_kit_problems(body.get("blocks") or [], body.get("text"))
        if problems:
            call.status = 400
            call.response = {"ok": False, "error": "invalid_blocks", "errors": problems}
            await self._notify()
            return web.Response(status=400, text="invalid_blocks")
        call.response = {"ok": True}
        await self._notify()
        return web.Response(text="ok")


def modal_problems(view: dict[str, Any]) -> list[str]:
    """What Slack would refuse in a modal view (the limits the adapter must respect)."""
    out = []
    if view.get("type") != "modal":
        out.append("type must be modal")
    if len(view.get("title", {}).get("text", "")) > 24:
        out.append("title over 24 characters")
    if len(view.get("callback_id", "")) > 255:
        out.append("callback_id over 255 characters")
    blocks = view.get("blocks") or []
    if not 1 <= len(blocks) <= 100:
        out.append("1..100 blocks")
    for b in blocks:
        if b.get("type") == "input" and len(b.get("label", {}).get("text", "")) > 2000:
            out.append("input label over 2000 characters")
    return out
