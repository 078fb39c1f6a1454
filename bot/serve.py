"""`quizbot serve`: the core with every platform that has credentials. Composition root."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

from bot.app import build_core
from bot.config import Settings
from bot.domain import Platform
from bot.errors import ConfigError, QuizError
from bot.ports import Chat

log = logging.getLogger(__name__)


async def serve(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Run until `stop` is set (SIGINT/SIGTERM when not given) or an adapter ends."""
    from adapters.slack import SlackAdapter, SlackChat, SlackConfig

    slack = SlackConfig.from_settings(settings)
    if slack is None and settings.discord_token is None:
        raise ConfigError(
            "no platform credentials: set SLACK_BOT_TOKEN (+ SLACK_APP_TOKEN for Socket Mode "
            "or SLACK_SIGNING_SECRET for HTTP mode) for Slack, or DISCORD_TOKEN for Discord; "
            "`quizbot play` runs in the terminal without any"
        )
    stop = stop or _stop_on_signals()
    chats: dict[str, Chat] = {}  # filled before the first message goes out
    async with AsyncExitStack() as stack:
        if slack is not None:
            slack_chat = await stack.enter_async_context(
                SlackChat(slack.bot_token, base_url=slack.api_url)
            )
            chats[Platform.SLACK] = slack_chat
        core = await stack.enter_async_context(build_core(settings, chats))
        ended: list[asyncio.Future[Any]] = []
        http_routes: list[Callable[[Any], None]] = []
        if slack is not None:
            adapter = await stack.enter_async_context(
                SlackAdapter(core.service, core.commands, slack_chat, slack)
            )
            if not adapter.socket_mode:
                http_routes.append(adapter.mount)
            log.info("Slack adapter running (%s mode)", "Socket" if adapter.socket_mode else "HTTP")
        if settings.discord_token is not None:
            from adapters.discord import DiscordAdapter

            discord = DiscordAdapter.from_settings(settings, core.service, core.commands)
            chats[Platform.DISCORD] = discord.chat
            await stack.enter_async_context(discord)
            ended.append(asyncio.ensure_future(discord.wait_closed()))
            log.info("Discord adapter running")
        for mount in http_routes:
            mount(core.web.app)  # before the server starts: aiohttp freezes its routes
        if slack is not None:
            core.web.add_check("slack", adapter.healthy)
        await stack.enter_async_context(core.web)
        # Everything built at start (question bank, ORM, discord.py) leaves the collector's
        # generations: full collections under a burst of clicks cost a third of the CPU.
        gc.freeze()
        log.info(
            "HTTP on port %d: /healthz, /metrics%s",
            core.web.port,
            ", /slack/events" if http_routes else "",
        )
        waiter: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
        await asyncio.wait([waiter, *ended], return_when=asyncio.FIRST_COMPLETED)
        for fut in [waiter, *ended]:
            fut.cancel()
        log.info("shutting down")
        if not stop.is_set():
            # Exit non-zero so a supervisor (systemd, Kubernetes) restarts the bot.
            raise QuizError("the Discord gateway connection ended; exiting for a restart")


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    return stop
