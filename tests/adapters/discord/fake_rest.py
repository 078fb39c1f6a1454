"""The fake Discord's REST resources: what the bot's calls do to the fake's state (messages,
threads, interactions and their webhooks, command sync), and the wire helpers.

Responses carry exactly ``Content-Type: application/json`` (discord.py does not decode
``application/json; charset=…``); the interaction callback answers ``?with_response=1``
with ``{"interaction": …, "resource": …}``, and 204 without it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import BodyPartReader, web

from tests.adapters.discord.fake_payloads import (
    EPHEMERAL,
    LOADING,
    DiscordPayloads,
    Json,
    now,
    user,
)
from tests.polling import Changes


@dataclass
class Call:
    method: str
    path: str  # without the /api/v10 prefix
    query: dict[str, str]
    json: Any
    files: list[tuple[str, int]] = field(default_factory=list)  # (filename, size)
    contents: list[bytes] = field(default_factory=list)  # the files' bytes, in that order
    at: float = 0.0  # time.monotonic() at arrival
    status: int = 200
    result: Any = None  # an edited message as it stands after the edit


@dataclass
class Interaction:
    id: str
    token: str
    type: int
    channel_id: str
    dispatched_at: float
    responded: bool = False
    original: Json | None = None
    modal: Json | None = None  # the form the bot opened in answer (response type 9)


class RestRoutes(DiscordPayloads):
    """The REST resources over the state `FakeDiscord` keeps, and its CDN (attachments)."""

    port: int
    threads: dict[str, Json]
    interactions: dict[str, Interaction]
    commands: list[Json]
    files: dict[str, bytes]  # attachment id -> its bytes
    downloads: list[str]  # attachment ids, as fetched
    dms: dict[str, str]  # user id -> the bot's DM channel with them
    closed_dms: set[str]  # users who take no DMs from the server's members
    owner_id: str
    roles: dict[str, int]  # role id -> permissions
    members: dict[str, list[str]]  # user id -> role ids
    role_members: dict[str, list[str]]  # role id -> its members' user ids
    members_intent: bool  # the Server Members intent is on (GET /guilds/{id}/members)
    _changes: Changes

    # -- attachments (Discord's CDN) -----------------------------------------------------

    def attach(self, filename: str, data: bytes, *, size: int | None = None) -> Json:
        """A file a member attached to a command, served at its URL; `size` is what
        Discord announces (the real size unless given)."""
        aid = self.snowflake()
        self.files[aid] = data
        return {
            "id": aid,
            "filename": filename,
            "size": len(data) if size is None else size,
            "url": f"http://127.0.0.1:{self.port}/attachments/{aid}/{filename}",
            "proxy_url": f"http://127.0.0.1:{self.port}/attachments/{aid}/{filename}",
            "content_type": "application/octet-stream",
        }

    async def _attachment(self, request: web.Request) -> web.Response:
        aid = request.match_info["id"]
        self.downloads.append(aid)
        await self._changes.notify()
        if aid not in self.files:
            return web.Response(status=404, text="Not Found")
        return web.Response(body=self.files[aid], content_type="application/octet-stream")

    def _route(
        self, method: str, path: str, body: Any, files: list[tuple[str, int]], call: Call
    ) -> web.Response:
        parts = path.strip("/").split("/")
        if method == "GET" and path == "/users/@me":
            return json_response(self.bot)
        if method == "GET" and path == "/users/@me/guilds":  # the bot's servers
            return json_response([{"id": self.guild_id, "name": "Fake Guild", "permissions": "0"}])
        if method == "GET" and parts[0] == "guilds" and len(parts) in (2, 4):
            return self._guild(parts[1], parts[3] if len(parts) == 4 else None)
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
            recipient = str(body["recipient_id"])
            channel = self.dms.setdefault(recipient, self.snowflake())  # one per user
            return json_response({"id": channel, "type": 1, "recipients": [user(recipient)]})
        if method == "GET" and parts[0] == "guilds" and parts[-1] == "members":
            return self._guild_members(parts[1], call.query)
        if parts[0] == "channels" and len(parts) >= 3 and parts[2] == "messages":
            return self._channel_messages(method, parts[1], parts[3:], body, files)
        raise RouteError(404, 0, "404: Not Found")

    def _guild(self, guild: str, member: str | None) -> web.Response:
        if guild != self.guild_id:
            raise RouteError(404, 10004, "Unknown Guild")
        if member is None:
            roles = {guild: 0, **self.roles}
            return json_response(
                {
                    "id": guild,
                    "name": "Fake Guild",
                    "owner_id": self.owner_id,
                    "roles": [{"id": r, "permissions": str(p)} for r, p in roles.items()],
                }
            )
        if member not in self.members:
            raise RouteError(404, 10007, "Unknown Member")
        return json_response({"user": user(member), "roles": list(self.members[member])})

    def _guild_members(self, guild_id: str, query: dict[str, str]) -> web.Response:
        """`GET /guilds/{id}/members`: needs the Server Members intent (`members_intent`);
        members with their roles (`role_members`: role id -> user ids), by id."""
        if guild_id != self.guild_id:
            raise RouteError(404, 10004, "Unknown Guild")
        if not self.members_intent:
            raise RouteError(403, 50001, "Missing Access")
        roles: dict[str, list[str]] = {}
        for role_id, users in self.role_members.items():
            for uid in users:
                roles.setdefault(uid, []).append(role_id)
        after, limit = int(query.get("after", "0")), int(query.get("limit", "1"))
        ids = sorted((u for u in roles if int(u) > after), key=int)[:limit]
        return json_response(
            [
                self.member(user(u, f"user{u[-4:]}"), permissions=None, roles=tuple(roles[u]))
                for u in ids
            ]
        )

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
            raise RouteError(404, 10062, "Unknown interaction")
        if inter.responded:
            raise RouteError(400, 40060, "Interaction has already been acknowledged.")
        inter.responded = True
        rtype = body["type"]
        data = body.get("data") or {}
        info: Json = {"id": iid, "type": inter.type}
        result: Json = {"interaction": info}
        if rtype == 9:
            if inter.type not in (2, 3):
                raise RouteError(
                    400, 50035, "Invalid Form Body: a modal answers a command or click"
                )
            inter.modal = data
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
            raise RouteError(404, 10015, "Unknown Webhook")
        if not rest and method == "POST":
            msg = self.message(inter.channel_id, body or {})
            self.messages[msg["id"]] = msg
            return json_response(msg)
        if len(rest) == 2 and rest[0] == "messages":
            target = inter.original if rest[1] == "@original" else self.messages.get(rest[1])
            if target is None:
                raise RouteError(404, 10008, "Unknown Message")
            if method == "GET":
                return json_response(target)
            if method == "PATCH":
                target.update({k: v for k, v in (body or {}).items() if k != "attachments"})
                if call.files:
                    target["attachments"] = [{"filename": n, "size": z} for n, z in call.files]
                target["flags"] = int(target.get("flags") or 0) & ~LOADING
                call.result = dict(target)
                return json_response(target)
            if method == "DELETE":
                self.messages.pop(target["id"], None)
                if rest[1] == "@original":
                    inter.original = None
                return web.Response(status=204)
        raise RouteError(404, 0, "404: Not Found")

    def _channel_messages(
        self, method: str, channel: str, rest: list[str], body: Any, files: list[tuple[str, int]]
    ) -> web.Response:
        if not rest and method == "POST":
            if any(self.dms.get(u) == channel for u in self.closed_dms):
                raise RouteError(400, 50007, "Cannot send messages to this user")
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
            raise RouteError(404, 10008, "Unknown Message")
        if len(rest) == 1 and method == "GET":
            return json_response(message)
        if len(rest) == 1 and method == "PATCH":
            message.update({k: v for k, v in (body or {}).items() if k != "attachments"})
            message["edited_timestamp"] = now()
            return json_response(message)
        if len(rest) == 2 and rest[1] == "threads" and method == "POST":
            if message["id"] in self.threads:
                raise RouteError(400, 160004, "A thread has already been created for this message")
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
        raise RouteError(404, 0, "404: Not Found")


class RouteError(Exception):
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


async def read_body(request: web.Request) -> tuple[Any, list[tuple[str, bytes]]]:
    """The JSON body (a multipart request's ``payload_json``) and its files (name, bytes)."""
    if request.content_type.startswith("multipart/"):
        body: Any = None
        files: list[tuple[str, bytes]] = []
        reader = await request.multipart()
        async for part in reader:
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "payload_json":
                body = json.loads(await part.text())
            else:
                files.append((part.filename or "", bytes(await part.read())))
        return body, files
    if request.can_read_body:
        raw = await request.read()
        return (json.loads(raw) if raw else None), []
    return None, []
