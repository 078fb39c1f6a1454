"""The authorize endpoint the fake OAuth providers (Discord's, Slack's OpenID) share."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from aiohttp import web

# (the authorize query, its redirect_uri) -> the answer's query: a code, or an error
Grant = Callable[[dict[str, str], str], dict[str, str]]


def authorize(
    request: web.Request, client_id: str, authorized: list[dict[str, str]], grant: Grant
) -> web.Response:
    """Record the query; a wrong client or no redirect is a 400, else the redirect back
    with what `grant` answers and the query's state."""
    query = dict(request.query)
    authorized.append(query)
    redirect = query.get("redirect_uri", "")
    if query.get("client_id") != client_id or not redirect:
        return web.Response(status=400, text="invalid client_id or redirect_uri")
    answer = {**grant(query, redirect), "state": query.get("state", "")}
    return web.Response(status=302, headers={"Location": f"{redirect}?{urlencode(answer)}"})
