"""Answer clicks straight from the gateway payload: acknowledge first, record after.

A burst of answer clicks is CPU-bound in the bot: discord.py builds an `Interaction` (with
its `Message`, `Member`, components and view) for every click, then the answer is written
and the callback sent — about 0.8 ms per click, so the last of a thousand clicks waited
most of a second for its initial response. `FastAnswers` replaces discord.py's
``INTERACTION_CREATE`` parser with one that looks at the raw payload first: a
``quiz:answer:<post>:<choice>`` click is acknowledged at once with a deferred private
response (type 5, ephemeral: "thinking…") — one prebuilt POST, no parsing beyond the dict
the gateway already decoded — and only then is the answer recorded and the outcome put in
place of "thinking…" (``PATCH …/messages/@original``), Discord's documented pattern for
work that follows the acknowledgement. Every other interaction goes to discord.py as before.

discord.py never sees these clicks, so it never answers them too (Discord would refuse a
second initial response with 40060). The answer itself is recorded after the callback, so
acknowledgements are not queued behind database writes during a burst.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import aiohttp
import yarl
from discord.http import Route

from adapters.discord.payloads import InteractionPayload, user_locale, user_ref
from adapters.discord.render import render
from bot.domain import Locale, UserRef
from bot.i18n import translator
from bot.messages import Message
from bot.quiz import QuizService

log = logging.getLogger(__name__)

_ANSWER = re.compile(r"quiz:answer:(\d+):(\d+)")
COMPONENT = 3  # interaction type: message component
EPHEMERAL = 1 << 6
# The deferred, private initial response: "<bot> is thinking…", seen only by the clicker.
DEFER_BODY = json.dumps({"type": 5, "data": {"flags": EPHEMERAL}}).encode()
# While acknowledgements are outstanding, recording and editing wait (at most this long):
# one event loop, and the acknowledgements are the part with a deadline.
MAX_HOLD = 2.0
SEND_ATTEMPTS = 3  # a 429 or a dropped connection is retried, within Discord's 3 s
MAX_RETRY_AFTER = 5.0

Parser = Callable[[Any], None]


@dataclass(frozen=True, slots=True)
class Click:
    """What an answer click needs once acknowledged (read from the raw payload)."""

    id: str
    token: str
    app_id: str
    post_id: int
    choice: int
    user: UserRef
    locale: Locale | None


class FastAnswers:
    """Hooks one `discord.Client`'s connection state; `start` it with the HTTP connector
    once the client logged in, `close` it before the client closes."""

    def __init__(
        self,
        service: QuizService,
        *,
        failed_text: str,
        user_agent: Callable[[], str],
    ) -> None:
        self.service = service
        self._failed_text = failed_text
        self._user_agent = user_agent
        self._session: aiohttp.ClientSession | None = None
        self._headers: dict[str, str] = {}
        self._inflight: set[asyncio.Task[None]] = set()
        self._pending_acks = 0
        self._gate: asyncio.Future[None] | None = None  # open (None) when no ack is pending
        self._hold_timer: asyncio.TimerHandle | None = None
        self.acknowledged = 0  # clicks whose deferral Discord accepted (tests, metrics)

    def install(self, parsers: dict[str, Parser]) -> None:
        """Take ``INTERACTION_CREATE`` from discord.py's parser table (the gateway looks
        the parser up there for every dispatch); other interactions are passed on."""
        fallback = parsers["INTERACTION_CREATE"]

        def parse_interaction_create(data: Any) -> None:
            if not self._take(data):
                fallback(data)

        parsers["INTERACTION_CREATE"] = parse_interaction_create

    async def start(self, connector: aiohttp.BaseConnector) -> None:
        """Send over discord.py's bounded keep-alive pool (the connector is shared)."""
        self._session = aiohttp.ClientSession(connector=connector, connector_owner=False)
        self._headers = {"User-Agent": self._user_agent(), "Content-Type": "application/json"}

    async def drain(self, timeout: float) -> None:
        if self._inflight:
            await asyncio.wait(set(self._inflight), timeout=timeout)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- the fast path -------------------------------------------------------------------

    def _take(self, data: Mapping[str, Any]) -> bool:
        """Called by the gateway for every INTERACTION_CREATE, synchronously."""
        if data.get("type") != COMPONENT or self._session is None:
            return False
        inner = data.get("data")
        custom_id = inner.get("custom_id") if isinstance(inner, Mapping) else None
        if not isinstance(custom_id, str) or not custom_id.startswith("quiz:answer:"):
            return False
        m = _ANSWER.fullmatch(custom_id)
        if m is None:
            return False
        try:
            payload = cast(InteractionPayload, data)
            click = Click(
                str(data["id"]),
                str(data["token"]),
                str(data["application_id"]),
                int(m[1]),
                int(m[2]),
                user_ref(payload),
                user_locale(payload),
            )
        except (KeyError, TypeError, ValueError):
            return False  # not a click we can read: discord.py's own path takes it
        # Only `click` is kept: the decoded payload (the whole message, the member, the
        # guild) is freed now rather than living, and being scanned by the garbage
        # collector, until the outcome is shown.
        loop = asyncio.get_running_loop()
        self._pending_acks += 1
        if self._gate is None:
            self._gate = loop.create_future()
            self._hold_timer = loop.call_later(MAX_HOLD, self._open_gate)
        task = loop.create_task(self._answer(click), name=f"discord-answer-{click.id}")
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        return True

    async def _answer(self, click: Click) -> None:
        try:
            deferred = await self._send(
                "POST", f"{Route.BASE}/interactions/{click.id}/{click.token}/callback", DEFER_BODY
            )
        finally:
            self._pending_acks -= 1
            if self._pending_acks == 0:
                self._open_gate()
        if deferred:
            self.acknowledged += 1
        if self._gate is not None:  # later clicks still wait for their acknowledgement
            await asyncio.wait((self._gate,))
        # Recorded even when the deferral failed: the click happened (a redelivery that
        # another process acknowledged records nothing twice: one answer per user).
        try:
            reply = await self.service.record_answer(
                click.post_id, click.user, click.choice, user_locale=click.locale
            )
            message = reply.message
        except Exception:
            log.exception("recording a click on post %s failed", click.post_id)
            message = Message(body=translator(click.locale or Locale.EN)(self._failed_text))
        if not deferred:
            return
        url = f"{Route.BASE}/webhooks/{click.app_id}/{click.token}/messages/@original"
        await self._send("PATCH", url, _edit_bytes(message))

    def _open_gate(self) -> None:
        if self._hold_timer is not None:
            self._hold_timer.cancel()
            self._hold_timer = None
        if self._gate is not None:
            self._gate.set_result(None)
            self._gate = None

    async def _send(self, method: str, url: str, body: bytes) -> bool:
        """One REST call with its retries; False (logged) when Discord refused it."""
        assert self._session is not None
        target = yarl.URL(url, encoded=True)
        for attempt in range(1, SEND_ATTEMPTS + 1):
            try:
                async with self._session.request(
                    method, target, data=body, headers=self._headers
                ) as resp:
                    if resp.status < 300:
                        return True
                    text = await resp.text()
                    if resp.status == 429 and attempt < SEND_ATTEMPTS:
                        await asyncio.sleep(_retry_after(resp.headers, text))
                        continue
                    if resp.status >= 500 and attempt < SEND_ATTEMPTS:
                        continue
                    log.warning("%s %s: %s %s", method, _redacted(url), resp.status, text[:200])
                    return False
            except (aiohttp.ClientError, OSError) as exc:
                if attempt == SEND_ATTEMPTS:
                    log.warning("%s %s failed: %s", method, _redacted(url), exc)
                    return False
        return False


def edit_body(message: Message) -> dict[str, Any]:
    """The ``PATCH @original`` body that puts `message` in place of "thinking…"."""
    rendered = render(message)
    return {"embeds": [dict(rendered.embed)], "components": rendered.components()}


@functools.lru_cache(maxsize=512)
def _edit_bytes(message: Message) -> bytes:
    # A burst on one question has a handful of distinct outcomes (per choice and locale).
    return json.dumps(edit_body(message)).encode()


def _redacted(url: str) -> str:
    """The URL without the interaction token (a credential for 15 minutes)."""
    return re.sub(r"/(interactions/\d+|webhooks/\d+)/[^/]+", r"/\1/…", url)


def _retry_after(headers: Mapping[str, str], text: str) -> float:
    try:
        seconds = float(json.loads(text)["retry_after"])
    except (ValueError, KeyError, TypeError):
        try:
            seconds = float(headers.get("Retry-After", "1"))
        except ValueError:
            seconds = 1.0
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


__all__ = ["Click", "FastAnswers", "edit_body"]
