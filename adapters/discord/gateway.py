"""The gateway connection (discord.py), and the one place quizbot reaches into discord.py's
private parts: interactions are taken from its parser table as raw JSON.

discord.py builds an `Interaction` object (with its message, member and view) for every
``INTERACTION_CREATE`` before any handler runs — most of the CPU of a burst of clicks —
and a payload it cannot parse stops its gateway connection (and `quizbot serve`). So the
``INTERACTION_CREATE`` entry of ``client._connection.parsers`` (where the gateway looks up
the parser of each dispatch) is replaced: every interaction goes, as the dict the gateway
decoded, to the adapter's one interaction path, and discord.py never sees one. discord.py
keeps doing what it is good at: login, the WebSocket, heartbeats, resume, sharding.

The hook point is private, so it is checked when the adapter starts (`check_hook`: a
`ConfigError` naming the installed version when it is missing), and the supported
discord.py range is pinned in pyproject.toml (`SUPPORTED_DISCORD_PY`, tested against the
installed version).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

import discord
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route

from bot.errors import ConfigError

log = logging.getLogger(__name__)

SUPPORTED_DISCORD_PY = ">=2.4,<2.8"
HOOKED_EVENT = "INTERACTION_CREATE"
TOKEN_REJECTED = (
    "Discord rejected DISCORD_TOKEN (401): reset the bot token in the Developer Portal (your "
    "application → Bot → Reset Token) and set it again"
)

Parser = Callable[[Any], None]


def check_hook(client: discord.Client) -> dict[str, Parser]:
    """discord.py's parser table, or a `ConfigError` naming the version and the fix."""
    parsers = getattr(getattr(client, "_connection", None), "parsers", None)
    if not isinstance(parsers, dict) or not callable(parsers.get(HOOKED_EVENT)):
        raise ConfigError(
            f"discord.py {discord.__version__} has no gateway parser for {HOOKED_EVENT} "
            "(client._connection.parsers), where quizbot takes interactions from; install a "
            f"supported version: pip install 'discord.py{SUPPORTED_DISCORD_PY}'"
        )
    return parsers


class Gateway:
    """A logged-in discord.py client whose interactions go to `on_interaction` (called
    synchronously from the gateway's read loop: it must only schedule work)."""

    def __init__(
        self,
        on_interaction: Parser,
        *,
        token: str,
        api_base: str | None = None,
        gateway_url: str | None = None,
        shard_count: int | None = None,
        shard_ids: Sequence[int] | None = None,
        guild_ready_timeout: float = 2.0,
    ) -> None:
        self._on_interaction = on_interaction
        self._token = token
        self._api_base = api_base
        self._gateway_url = gateway_url
        intents = discord.Intents.none()
        intents.guilds = True  # READY and the guilds; nothing privileged
        options: dict[str, Any] = {"intents": intents, "guild_ready_timeout": guild_ready_timeout}
        if shard_count is not None:
            options["shard_count"] = shard_count
            if shard_ids:
                options["shard_ids"] = list(shard_ids)
            self.client: discord.Client = discord.AutoShardedClient(**options)
        else:
            self.client = discord.Client(**options)
        self._connection: asyncio.Task[None] | None = None
        self._saved: tuple[str, yarl.URL] | None = None

    def hook(self) -> None:
        """Take interactions from discord.py's parser table (checked: see `check_hook`)."""
        check_hook(self.client)[HOOKED_EVENT] = self._on_interaction_create

    async def initialize(self) -> None:
        """Log in and connect in the background (`hook` first)."""
        self._point_at_endpoints()
        try:
            await self.client.login(self._token)
        except BaseException as exc:
            await self.shutdown()
            if isinstance(exc, discord.LoginFailure):
                raise ConfigError(TOKEN_REJECTED) from None
            raise
        self._connection = asyncio.create_task(self._connect(), name="discord-gateway")

    def _on_interaction_create(self, data: Any) -> None:
        try:
            self._on_interaction(data)
        except Exception:  # the gateway's read loop must go on, whatever arrived
            log.exception("Discord: an interaction could not be scheduled")

    async def _connect(self) -> None:
        try:
            await self.client.connect(reconnect=True)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the Discord gateway connection ended")
            raise

    async def shutdown(self) -> None:
        await self.client.close()
        if self._connection is not None:
            # Its failure, if any, was logged where it happened.
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(self._connection, timeout=10)
        self._restore_endpoints()

    async def wait_until_ready(self, timeout: float | None = None) -> None:
        """Until READY and the guilds arrived (or the connection failed)."""
        assert self._connection is not None, "start the gateway first"
        ready = asyncio.ensure_future(self.client.wait_until_ready())
        done, _ = await asyncio.wait(
            {ready, self._connection}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if ready not in done:
            ready.cancel()
            if self._connection in done:
                self._connection.result()  # raises why it ended
            raise TimeoutError(f"Discord was not ready within {timeout} s")

    def healthy(self) -> bool:
        """Connected and READY (discord.py reconnects by itself; a long outage shows)."""
        return (
            self._connection is not None
            and not self._connection.done()
            and self.client.is_ready()
            and not self.client.is_closed()
        )

    async def wait_closed(self) -> None:
        if self._connection is not None:
            await self._connection

    # The REST base and gateway URL are class attributes in discord.py: a proxy (or the
    # tests' fake Discord) is set there for the whole process, and restored after.

    def _point_at_endpoints(self) -> None:
        self._saved = (Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY)
        if self._api_base:
            Route.BASE = self._api_base.rstrip("/")
        if self._gateway_url:
            DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self._gateway_url)

    def _restore_endpoints(self) -> None:
        if self._saved is not None:
            Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = self._saved
            self._saved = None


__all__ = ["HOOKED_EVENT", "SUPPORTED_DISCORD_PY", "TOKEN_REJECTED", "Gateway", "check_hook"]
