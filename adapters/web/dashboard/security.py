"""The headers every dashboard answer carries, and the answers that refuse a request.

The Content-Security-Policy allows the site's own stylesheet and images and nothing else:
no script (every page works without one), no inline style (charts are styled by class),
no frames, forms posting only back to the site. Signed-in pages are never cached and
never send a Referer (an OAuth callback's code stays on this site).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}
PREFIXES = ("/w/", "/login/", "/auth/", "/static/")
EXACT = {"/", "/logout", "/lang"}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def is_dashboard(path: str) -> bool:
    return path in EXACT or path.startswith(PREFIXES)


@web.middleware
async def security_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await handler(request)
    if is_dashboard(request.path):
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        if not request.path.startswith("/static/"):
            response.headers.setdefault("Cache-Control", "no-store")
    return response


__all__ = ["CSP", "HEADERS", "is_dashboard", "security_headers"]
