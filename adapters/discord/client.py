"""`DiscordAdapter`: the Discord side of `quizbot serve`, as an async context manager.

It owns a `discord.Client` (an `AutoShardedClient` when a shard count is configured), the
`/quiz` command tree and the persistent answer buttons, and exposes `chat` — the core's
`Chat` for `Platform.DISCORD`. Entering logs in, syncs the commands (to the development
guild when one is set, else globally) and connects to the gateway in the background;
leaving drains the core's pending edits and closes the connection.

The REST base (`discord.http.Route.BASE`) and the gateway URL
(`DiscordWebSocket.DEFAULT_GATEWAY`) are class attributes in discord.py: a REST or gateway
proxy (or the tests' fake Discord) is set there for the whole process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any, Self

import aiohttp
import discord
import yarl
from discord import app_commands
from discord.gateway import DiscordWebSocket
from discord.http import Route

from adapters.discord.buttons import DYNAMIC_ITEMS, QuizClient, ShardedQuizClient
from adapters.discord.chat import DiscordChat
from adapters.discord.fast import FastAnswers
from adapters.discord.interactions import FAILED, InteractionHandler
from adapters.discord.slash import DescriptionTranslator, quiz_group
from bot.commands import CommandSet
from bot.config import Settings
from bot.errors import ConfigError
from bot.quiz import QuizService

log = logging.getLogger(__name__)


def parse_shard_ids(text: str) -> list[int]:
    """``"0,1"`` or ``"4-7"`` (or both, comma-separated) -> shard ids; ``""`` -> []."""
    ids: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                ids.extend(range(lo, hi + 1))
            else:
                ids.append(int(part))
        except ValueError:
            raise ConfigError(
                f"QUIZBOT_DISCORD_SHARD_IDS: {part!r} is not a shard id or range; "
                "use e.g. 0,1 or 4-7"
            ) from None
    return ids


class DiscordAdapter:
    def __init__(
        self,
        service: QuizService,
        commands: CommandSet,
        *,
        token: str,
        api_base: str | None = None,
        gateway_url: str | None = None,
        dev_guild: int | None = None,
        shard_count: int | None = None,
        shard_ids: Sequence[int] | None = None,
        admin_role: int | None = None,
        admin_ids: Iterable[str] = (),
        ack_deadline: float = 1.0,
        guild_ready_timeout: float = 2.0,
        sync_commands: bool = True,
        http_connections: int = 100,
    ) -> None:
        if not token:
            raise ConfigError("DISCORD_TOKEN is empty: copy the token from the Developer Portal")
        if shard_ids and shard_count is None:
            raise ConfigError(
                "QUIZBOT_DISCORD_SHARD_IDS needs QUIZBOT_DISCORD_SHARD_COUNT (the total)"
            )
        if shard_count is not None and any(not 0 <= s < shard_count for s in shard_ids or ()):
            raise ConfigError(
                f"QUIZBOT_DISCORD_SHARD_IDS {list(shard_ids or [])} must lie in "
                f"0..{shard_count - 1} (QUIZBOT_DISCORD_SHARD_COUNT={shard_count})"
            )
        self.service = service
        self._token = token
        self._api_base = api_base
        self._gateway_url = gateway_url
        self.dev_guild = dev_guild
        self._sync = sync_commands
        self._http_connections = http_connections
        self.handler = InteractionHandler(
            service, commands, admin_role=admin_role, admin_ids=admin_ids, ack_deadline=ack_deadline
        )
        intents = discord.Intents.none()
        intents.guilds = True  # channels, threads and roles of the guilds; nothing privileged
        options: dict[str, Any] = {"intents": intents, "guild_ready_timeout": guild_ready_timeout}
        self.client: discord.Client
        if shard_count is not None:
            options["shard_count"] = shard_count
            if shard_ids:
                options["shard_ids"] = list(shard_ids)
            self.client = ShardedQuizClient(self.handler, **options)
        else:
            self.client = QuizClient(self.handler, **options)
        self.client.add_dynamic_items(*DYNAMIC_ITEMS)
        # Answer clicks skip discord.py's Interaction objects: acknowledged from the raw
        # gateway payload, then recorded (see adapters/discord/fast.py).
        self.fast = FastAnswers(
            service, failed_text=FAILED, user_agent=lambda: self.client.http.user_agent
        )
        self.fast.install(self.client._connection.parsers)
        self.tree: app_commands.CommandTree[discord.Client] = app_commands.CommandTree(self.client)
        self.tree.add_command(
            quiz_group(self.handler.command, service.bank.topics, service.bank.demos)
        )
        self.chat = DiscordChat(self.client)
        self._connection: asyncio.Task[None] | None = None
        self._saved: tuple[str, yarl.URL] | None = None

    @classmethod
    def from_settings(
        cls, settings: Settings, service: QuizService, commands: CommandSet, **overrides: Any
    ) -> DiscordAdapter:
        """From `Settings`: DISCORD_TOKEN, DISCORD_API_BASE, DISCORD_GATEWAY_URL,
        QUIZBOT_DISCORD_DEV_GUILD, QUIZBOT_DISCORD_SHARD_COUNT, QUIZBOT_DISCORD_SHARD_IDS,
        QUIZBOT_DISCORD_ADMIN_ROLE, QUIZBOT_ADMINS."""
        if settings.discord_token is None:
            raise ConfigError("DISCORD_TOKEN is not set")
        # getattr: the QUIZBOT_DISCORD_* fields join `Settings` with the composition root.
        shard_ids = getattr(settings, "discord_shard_ids", "") or ""
        options: dict[str, Any] = {
            "token": settings.discord_token.get_secret_value(),
            "api_base": settings.discord_api_base,
            "gateway_url": settings.discord_gateway_url,
            "dev_guild": getattr(settings, "discord_dev_guild", None),
            "shard_count": getattr(settings, "discord_shard_count", None),
            "shard_ids": parse_shard_ids(shard_ids) if isinstance(shard_ids, str) else shard_ids,
            "admin_role": getattr(settings, "discord_admin_role", None),
            "admin_ids": settings.admin_ids,
        }
        options.update(overrides)
        return cls(service, commands, **options)

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        self._point_at_endpoints()
        # discord.py's default pool is unbounded: a burst of clicks would open a connection
        # (a TLS handshake, on Discord) per interaction callback. A bounded pool of
        # keep-alive connections answers a burst sooner. The gateway holds one per shard.
        self.client.http.connector = aiohttp.TCPConnector(limit=self._http_connections)
        try:
            await self.client.login(self._token)
            await self.fast.start(self.client.http.connector)
            await self.tree.set_translator(DescriptionTranslator())
            if self._sync:
                await self.sync_commands()
        except BaseException as exc:
            await self.fast.close()
            await self.client.close()
            self._restore_endpoints()
            if isinstance(exc, discord.LoginFailure):
                raise ConfigError(
                    "Discord rejected DISCORD_TOKEN (401): reset the bot token in the Developer "
                    "Portal (your application → Bot → Reset Token) and set it again"
                ) from None
            raise
        self._connection = asyncio.create_task(self._connect(), name="discord-gateway")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self.handler.drain(timeout=5)  # answer the clicks being handled
            await self.fast.drain(timeout=5)
            await self.service.drain_updates()  # count edits still need the client
        finally:
            await self.fast.close()
            await self.client.close()
            if self._connection is not None:
                # Its failure, if any, was logged where it happened.
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.wait_for(self._connection, timeout=10)
            self._restore_endpoints()

    async def _connect(self) -> None:
        try:
            await self.client.connect(reconnect=True)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the Discord gateway connection ended")
            raise

    async def wait_until_ready(self, timeout: float | None = None) -> None:
        """Until READY and the guilds arrived (or the connection failed)."""
        assert self._connection is not None, "enter the adapter first"
        ready = asyncio.ensure_future(self.client.wait_until_ready())
        done, _ = await asyncio.wait(
            {ready, self._connection}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if ready not in done:
            ready.cancel()
            if self._connection in done:
                self._connection.result()  # raises why it ended
            raise TimeoutError(f"Discord was not ready within {timeout} s")

    async def healthy(self) -> bool:
        """For /healthz: the gateway connection is up and READY came (discord.py reconnects
        by itself; a long outage shows here)."""
        return (
            self._connection is not None
            and not self._connection.done()
            and self.client.is_ready()
            and not self.client.is_closed()
        )

    async def wait_closed(self) -> None:
        """Until the gateway connection ends (`quizbot serve` waits on this)."""
        if self._connection is not None:
            await self._connection

    async def sync_commands(self) -> list[app_commands.AppCommand]:
        """Register `/quiz`: on the development guild (instantly) when one is set, else
        globally. Each sync counts against Discord's 200 command creations a day."""
        if self.dev_guild is not None:
            guild = discord.Object(self.dev_guild)
            self.tree.copy_global_to(guild=guild)
            synced = await self.tree.sync(guild=guild)
            log.info("synced %d command(s) to guild %s", len(synced), self.dev_guild)
        else:
            synced = await self.tree.sync()
            log.info("synced %d global command(s)", len(synced))
        return synced

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


__all__ = ["DiscordAdapter", "parse_shard_ids"]
