"""Discord's OAuth2 on the fake Discord: the authorize page (approved at once for the
member the test names), ``POST /oauth2/token`` (form-encoded, client credentials by basic
auth, the code once, the redirect and the PKCE verifier checked) and the user's own
routes with a Bearer token: ``/users/@me``, ``/users/@me/guilds`` (each guild's
permissions) and ``/users/@me/guilds/{guild}/member`` (scope ``guilds.members.read``).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web

from tests.adapters import fake_authorize

CLIENT_ID = "555555555555555555"
CLIENT_SECRET = "fake-discord-client-secret"
MANAGE_GUILD = 1 << 5


@dataclass
class Member:
    id: str = "9001"
    username: str = "bea"
    # guild id -> (name, permissions bitset, roles); every guild the member is in
    guilds: dict[str, tuple[str, int, list[str]]] = field(default_factory=dict)


@dataclass
class DiscordOAuth:
    client_id: str = CLIENT_ID
    client_secret: str = CLIENT_SECRET
    member: Member = field(default_factory=Member)
    grants: dict[str, tuple[Member, str, str, str]] = field(default_factory=dict)  # code -> …
    tokens: dict[str, tuple[Member, str]] = field(default_factory=dict)  # token -> (member, scopes)
    authorized: list[dict[str, str]] = field(default_factory=list)

    async def authorize(self, request: web.Request) -> web.Response:
        return fake_authorize.authorize(request, self.client_id, self.authorized, self._grant)

    def _grant(self, query: dict[str, str], redirect: str) -> dict[str, str]:
        code = secrets.token_hex(8)
        scopes = query.get("scope", "")
        self.grants[code] = (self.member, redirect, query.get("code_challenge", ""), scopes)
        return {"code": code}

    def token(self, raw: bytes, authorization: str) -> tuple[int, Any]:
        expected = base64.b64encode(f"{self.client_id}:{self.client_secret}".encode()).decode()
        if authorization != f"Basic {expected}":
            return 401, {"error": "invalid_client"}
        form = dict(parse_qsl(raw.decode()))
        grant = self.grants.pop(form.get("code", ""), None)
        if grant is None or form.get("grant_type") != "authorization_code":
            return 400, {"error": "invalid_grant"}
        member, redirect, challenge, scopes = grant
        if form.get("redirect_uri") != redirect:
            return 400, {"error": "invalid_grant", "error_description": "redirect_uri"}
        digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
        if base64.urlsafe_b64encode(digest).decode().rstrip("=") != challenge:
            return 400, {"error": "invalid_grant", "error_description": "code_verifier"}
        token = secrets.token_hex(12)
        self.tokens[token] = (member, scopes)
        return 200, {"access_token": token, "token_type": "Bearer", "scope": scopes}

    def user_route(self, method: str, path: str, token: str) -> tuple[int, Any]:
        found = self.tokens.get(token)
        if found is None or method != "GET":
            return 401, {"message": "401: Unauthorized", "code": 0}
        member, scopes = found
        if path == "/users/@me":
            return 200, {"id": member.id, "username": member.username, "global_name": "Bea"}
        if path == "/users/@me/guilds" and "guilds" in scopes.split():
            return 200, [
                {"id": g, "name": name, "owner": False, "permissions": str(perms)}
                for g, (name, perms, _) in member.guilds.items()
            ]
        parts = path.strip("/").split("/")
        if len(parts) == 5 and parts[:3] == ["users", "@me", "guilds"] and parts[4] == "member":
            if "guilds.members.read" not in scopes.split():
                return 403, {"message": "Missing Access", "code": 50001}
            guild = member.guilds.get(parts[3])
            if guild is None:
                return 404, {"message": "Unknown Guild", "code": 10004}
            return 200, {"roles": guild[2], "user": {"id": member.id}}
        return 404, {"message": "404: Not Found", "code": 0}


__all__ = ["CLIENT_ID", "CLIENT_SECRET", "MANAGE_GUILD", "DiscordOAuth", "Member"]
