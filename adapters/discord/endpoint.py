"""Discord's HTTP interactions: ``POST /discord/interactions`` (the application's
"Interactions Endpoint URL"), how Discord apps scale out behind a load balancer.

Each request is checked before anything is read from it: an Ed25519 signature
(``X-Signature-Ed25519``) over ``X-Signature-Timestamp`` + body with the application's
public key (`DISCORD_PUBLIC_KEY`), and a timestamp within five minutes (a captured
request cannot be replayed later). A bad, missing or stale signature is answered 401 and
nothing is recorded. A signed request goes through the same interaction path as the
gateway's (`DiscordInteractions.handle`); its initial response is the HTTP response
itself, sent before what follows it (follow-ups go through the interaction's webhook).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

from aiohttp import web
from nacl.exceptions import CryptoError
from nacl.signing import VerifyKey

from adapters.discord.interactions import DiscordInteractions
from adapters.discord.payloads import Malformed
from bot.errors import ConfigError
from bot.logs import ThrottledLog, problem_key
from bot.tasks import TaskSupervisor

log = logging.getLogger(__name__)

PATH = "/discord/interactions"
MAX_BODY = 1 << 20  # Discord's interactions are a few KiB
MAX_SKEW = 300.0  # seconds between Discord signing a request and us reading it


def verify_key(public_key: str) -> VerifyKey:
    """The application's public key, or a `ConfigError` naming the fix."""
    try:
        raw = bytes.fromhex(public_key.strip())
        if len(raw) != 32:
            raise ValueError
        return VerifyKey(raw)
    except ValueError:
        raise ConfigError(
            "DISCORD_PUBLIC_KEY must be the application's public key: 64 hex digits "
            "(Developer Portal → your application → General Information → Public Key)"
        ) from None


class InteractionsEndpoint:
    def __init__(
        self,
        public_key: str,
        path: DiscordInteractions,
        tasks: TaskSupervisor,
        *,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._key = verify_key(public_key)
        self._path = path
        self._tasks = tasks
        self._now = now
        self._problems = ThrottledLog(log)

    def mount(self, app: web.Application, path: str = PATH) -> None:
        app.router.add_post(path, self.handle)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.read()  # bounded by the application's client_max_size
        except web.HTTPRequestEntityTooLarge:
            return _error(413, "request too large")
        if len(body) > MAX_BODY:
            return _error(413, "request too large")
        if not self._signed(request, body):
            return _error(401, "invalid request signature")
        try:
            handled = await self._path.handle(_json(body))
        except Malformed as exc:
            self._path.dropped(exc)
            return _error(400, "malformed interaction")
        except Exception as exc:
            self._problems.problem(
                problem_key("discord http", exc), "Discord: an interaction failed", exc=exc
            )
            return _error(500, "internal error")
        if handled.response is None:
            return _error(409, "already handled")
        response = web.json_response(handled.response)
        sent = True
        try:
            await response.prepare(request)
            await response.write_eof()  # the initial response is out before any follow-up
        except (ConnectionError, RuntimeError) as exc:  # Discord hung up (its 3 s passed)
            sent = False
            log.warning("Discord: the answer to an interaction could not be sent: %s", exc)
        if handled.later is not None:
            self._tasks.spawn(handled.later(sent), name="discord-later")
        return response

    def _signed(self, request: web.Request, body: bytes) -> bool:
        signature = request.headers.get("X-Signature-Ed25519", "")
        timestamp = request.headers.get("X-Signature-Timestamp", "")
        try:
            if abs(self._now() - int(timestamp)) > MAX_SKEW:
                return False
            self._key.verify(timestamp.encode() + body, bytes.fromhex(signature))
        except (ValueError, CryptoError):
            return False
        return True


def _json(body: bytes) -> object:
    try:
        return json.loads(body)
    except ValueError:
        raise Malformed("not JSON") from None


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


__all__ = ["PATH", "InteractionsEndpoint", "verify_key"]
