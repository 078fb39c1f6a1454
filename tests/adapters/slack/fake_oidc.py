"""Sign in with Slack on the fake Slack: the authorize page (approved at once for the
member the test names), `openid.connect.token` (client credentials, the code once, the
redirect and the PKCE verifier checked) and `openid.connect.userInfo` (the user's token).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.adapters import fake_authorize

CLIENT_ID = "1111.2222"
CLIENT_SECRET = "fake-slack-client-secret"


@dataclass
class Grant:
    user: str
    team: str
    name: str
    redirect: str
    challenge: str
    used: bool = False


@dataclass
class SlackOidc:
    client_id: str = CLIENT_ID
    client_secret: str = CLIENT_SECRET
    # Who signs in next: (user id, team id, name); None: the member cancels.
    member: tuple[str, str, str] | None = ("UANN", "T0FAKE", "Ann")
    team_name: str = "Fake Team"
    grants: dict[str, Grant] = field(default_factory=dict)  # code -> grant
    tokens: dict[str, Grant] = field(default_factory=dict)  # user token -> grant
    authorized: list[dict[str, str]] = field(default_factory=list)  # authorize queries

    async def authorize(self, request: web.Request) -> web.Response:
        return fake_authorize.authorize(request, self.client_id, self.authorized, self._grant)

    def _grant(self, query: dict[str, str], redirect: str) -> dict[str, str]:
        if self.member is None:
            return {"error": "access_denied"}
        code = secrets.token_hex(8)
        user, team, name = self.member
        self.grants[code] = Grant(user, team, name, redirect, query.get("code_challenge", ""))
        return {"code": code}

    def token(self, args: dict[str, Any]) -> dict[str, Any]:
        if (
            args.get("client_id") != self.client_id
            or args.get("client_secret") != self.client_secret
        ):
            return {"ok": False, "error": "invalid_client_id"}
        grant = self.grants.get(str(args.get("code", "")))
        if grant is None or grant.used:
            return {"ok": False, "error": "invalid_code"}
        grant.used = True
        if args.get("redirect_uri") != grant.redirect:
            return {"ok": False, "error": "bad_redirect_uri"}
        verifier = str(args.get("code_verifier", ""))
        digest = hashlib.sha256(verifier.encode()).digest()
        if base64.urlsafe_b64encode(digest).decode().rstrip("=") != grant.challenge:
            return {"ok": False, "error": "invalid_code_verifier"}
        token = "xoxp-oidc-" + secrets.token_hex(8)
        self.tokens[token] = grant
        return {"ok": True, "access_token": token, "token_type": "Bearer", "id_token": "x.y.z"}

    def user_info(self, token: str | None) -> dict[str, Any]:
        grant = self.tokens.get(token or "")
        if grant is None:
            return {"ok": False, "error": "invalid_auth"}
        return {
            "ok": True,
            "sub": grant.user,
            "https://slack.com/user_id": grant.user,
            "https://slack.com/team_id": grant.team,
            "https://slack.com/team_name": self.team_name,
            "name": grant.name,
        }


__all__ = ["CLIENT_ID", "CLIENT_SECRET", "SlackOidc"]
