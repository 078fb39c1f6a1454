"""`DiscordRest`: the adapter's one way to Discord's REST API (aiohttp, one bounded pool of
keep-alive connections), for posting, editing, threads, command sync and every answer to
an interaction.

Each call is retried where retrying can help: a 429 after its ``retry_after`` (when Discord
itself sent it: its responses carry a ``Via`` header; a 429 without one is Cloudflare
refusing the host, and waiting does not help), a 5xx or a dropped connection after a short
backoff. What still fails is logged once per interval with the method, route and status,
counted in ``quizbot_platform_errors_total``, and raised as the core's `PlatformError`
(`NotInChannel` where the bot may not post). Interaction tokens are credentials for
15 minutes: they never reach a log line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import yarl

from bot.errors import NotInChannel, PlatformError
from bot.lifecycle import Lifecycle
from bot.logs import ThrottledLog
from bot.metrics import QuizMetrics

log = logging.getLogger(__name__)

API_BASE = "https://discord.com/api/v10"
USER_AGENT = "DiscordBot (https://github.com/quizbot/quizbot, 0.1) quizbot"
# Discord error codes: Missing Access, Missing Permissions, Unknown Channel — the bot may
# not post where it was asked to.
NOT_IN_CHANNEL_CODES = frozenset({50001, 50013, 10003})
RETRIED_STATUSES = frozenset({500, 502, 503, 504})
DOWNLOAD_CHUNK = 1 << 16
_TOKEN_IN_PATH = re.compile(r"/(interactions/\d+|webhooks/\d+)/[^/?]+")
_IDS_IN_PATH = re.compile(r"/\d+")

Sleep = Callable[[float], Awaitable[None]]
Files = Sequence[tuple[str, bytes]]


class DiscordError(PlatformError):
    """A refused Discord call, with Discord's JSON error code when it sent one."""

    def __init__(self, route: str, status: int | None, code: int | None, reason: str) -> None:
        super().__init__("Discord", route, status, reason)
        self.code = code


class DiscordNotInChannel(DiscordError, NotInChannel):
    """The bot may not post in the channel (no access, no permission, or no channel)."""


def redacted(path: str) -> str:
    """The path without the interaction token."""
    return _TOKEN_IN_PATH.sub(r"/\1/…", path)


def route_of(method: str, path: str) -> str:
    """``POST /channels/:id/messages``: a metric label without ids or tokens."""
    return f"{method} {_IDS_IN_PATH.sub('/:id', redacted(path))}"


class DiscordRest(Lifecycle):
    """Start it (``async with``) before use; `call` returns the decoded JSON (None for an
    empty answer) or raises `PlatformError`."""

    def __init__(
        self,
        token: str,
        api_base: str | None = None,
        *,
        metrics: QuizMetrics | None = None,
        connections: int = 100,
        attempts: int = 4,
        max_retry_after: float = 30.0,
        timeout: float = 15.0,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._token = token
        self.api_base = (api_base or API_BASE).rstrip("/")
        self.metrics = metrics
        self._connections = connections
        self._attempts = attempts
        self._max_retry_after = max_retry_after
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._sleep = sleep
        self._session: aiohttp.ClientSession | None = None
        self._problems = ThrottledLog(log)

    async def initialize(self) -> None:
        if self._session is None:
            # Bounded: a burst of clicks reuses keep-alive connections instead of opening
            # (a TLS handshake, on Discord) one per answer.
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._connections),
                timeout=self._timeout,
                headers={"User-Agent": USER_AGENT},
            )

    async def shutdown(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    @property
    def started(self) -> bool:
        return self._session is not None

    async def call(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | Sequence[Any] | None = None,
        *,
        files: Files = (),
        attempts: int | None = None,
        max_retry_after: float | None = None,
    ) -> Any:
        """One REST call with its retries. Interaction callbacks and webhooks are
        authorised by their token, so the bot token goes only to the other routes."""
        if self._session is None:
            raise RuntimeError("DiscordRest is not started: use `async with DiscordRest(...)`")
        url = yarl.URL(self.api_base + path, encoded=True)
        headers = {} if path.startswith(("/interactions/", "/webhooks/")) else self._auth()
        tries = attempts or self._attempts
        longest = self._max_retry_after if max_retry_after is None else max_retry_after
        route = route_of(method, path)
        for attempt in range(1, tries + 1):
            last = attempt == tries
            try:
                async with self._session.request(
                    method, url, headers=headers, **_body(body, files)
                ) as resp:
                    if resp.status < 300:
                        return await _json(resp)
                    text = await resp.text()
                    wait = _retry_wait(resp.status, resp.headers, text, attempt)
                    if wait is not None and not last and wait <= longest:
                        await self._sleep(wait)
                        continue
                    raise self._refused(route, resp.status, text)
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                if last:
                    raise self._failed(route, exc) from exc
                await self._sleep(0.25 * attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    async def download(self, url: str, dest: Path, max_bytes: int) -> int:
        """Stream a file (an attachment on Discord's CDN: its URL is signed, so no token
        goes with it) into `dest`; its size. Stops, refused, once it passes `max_bytes`."""
        if self._session is None:
            raise RuntimeError("DiscordRest is not started: use `async with DiscordRest(...)`")
        route = "GET attachment"
        size = 0
        try:
            async with self._session.get(url, allow_redirects=False) as resp:
                if resp.status != 200:
                    raise self._refused(route, resp.status, "")
                with dest.open("wb") as out:
                    async for chunk in resp.content.iter_chunked(DOWNLOAD_CHUNK):
                        size += len(chunk)
                        if size > max_bytes:
                            raise DiscordError(route, 413, None, "larger than its announced size")
                        out.write(chunk)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise self._failed(route, exc) from exc
        return size

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bot {self._token}"}

    def _refused(self, route: str, status: int, text: str) -> DiscordError:
        code, reason = _reason(status, text)
        kind = DiscordNotInChannel if code in NOT_IN_CHANNEL_CODES else DiscordError
        self._count(route, str(status))
        self._problems.problem(
            f"discord {route} {status} {code}", "Discord %s: %s %s", route, status, reason
        )
        return kind(route, status, code, reason)

    def _failed(self, route: str, exc: BaseException) -> DiscordError:
        reason = "timed out" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
        self._count(route, "none")
        self._problems.problem(
            f"discord {route} {type(exc).__name__}", "Discord %s: %s", route, reason
        )
        return DiscordError(route, None, None, reason[:200])

    def _count(self, route: str, status: str) -> None:
        if self.metrics is not None:
            self.metrics.platform_errors.inc(platform="discord", method=route, status=status)


def _body(body: Mapping[str, Any] | Sequence[Any] | None, files: Files) -> dict[str, Any]:
    if not files:
        return {} if body is None else {"json": body}
    # A fresh form per attempt: aiohttp consumes one when it sends it.
    form = aiohttp.FormData()
    form.add_field("payload_json", json.dumps(body or {}), content_type="application/json")
    for i, (name, data) in enumerate(files):
        form.add_field(f"files[{i}]", data, filename=name)
    return {"data": form}


async def _json(resp: aiohttp.ClientResponse) -> Any:
    if resp.status == 204:
        return None
    raw = await resp.read()
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _retry_wait(status: int, headers: Mapping[str, str], text: str, attempt: int) -> float | None:
    """Seconds to wait before trying again; None when trying again would not help."""
    if status in RETRIED_STATUSES:
        return 0.25 * attempt
    if status != 429 or "Via" not in headers:
        return None  # a 429 without Via comes from Cloudflare (the host is banned a while)
    try:
        seconds = float(json.loads(text)["retry_after"])
    except (ValueError, KeyError, TypeError):
        try:
            seconds = float(headers.get("Retry-After", "1"))
        except ValueError:
            seconds = 1.0
    return max(seconds, 0.0)


def _reason(status: int, text: str) -> tuple[int | None, str]:
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and "message" in data:
        code = data.get("code")
        code = code if isinstance(code, int) else None
        return code, f"{code} {data['message']}"[:200] if code is not None else str(data["message"])
    first = " ".join(text.split())[:80]
    return None, f"HTTP {status}" + (f": {first}" if first else " with an empty body")


__all__ = [
    "API_BASE",
    "DiscordError",
    "DiscordNotInChannel",
    "DiscordRest",
    "redacted",
    "route_of",
]
