"""`DiscordAdapter`: the Discord side of `quizbot serve`, as an async context manager.

Two ways in, one path through (`interactions.DiscordInteractions`):

- **gateway mode** (default): a discord.py connection (`gateway.Gateway`, sharded when a
  shard count is configured) hands every interaction over as raw JSON; the initial
  response is POSTed to the interaction callback.
- **HTTP mode** (``DISCORD_PUBLIC_KEY`` set): Discord POSTs interactions to
  ``/discord/interactions`` (`endpoint.InteractionsEndpoint`, mounted on the bot's HTTP
  server); the initial response is the HTTP response. No gateway connection: Discord sends
  interactions to the endpoint once its URL is set, and posting needs only REST. Any number
  of replicas may serve it on one database.

Both post, edit and thread through `DiscordChat` over the adapter's REST client. Entering
checks the token (and finds the application id), syncs `/quiz` (to the development guild
when one is set, else globally) and connects the gateway in gateway mode; leaving answers
the interactions in flight and drains the core's pending edits.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from aiohttp import web

from adapters.discord.chat import DiscordChat
from adapters.discord.endpoint import PATH, InteractionsEndpoint, verify_key
from adapters.discord.gateway import TOKEN_REJECTED, Gateway
from adapters.discord.interactions import DiscordInteractions
from adapters.discord.payloads import Malformed
from adapters.discord.replies import Webhook
from adapters.discord.rest import DiscordRest
from adapters.discord.slash import quiz_command
from bot.config import Settings
from bot.errors import ConfigError, PlatformError
from bot.features import Quiz
from bot.lifecycle import Lifecycle
from bot.logs import problem_key
from bot.metrics import QuizMetrics
from bot.tasks import TaskSupervisor

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


def discord_rest(settings: Settings, metrics: QuizMetrics | None = None) -> DiscordRest:
    """The REST client `quizbot serve` opens before the core (and closes after it): posts,
    threads and edits go through it for as long as any feature runs."""
    if settings.discord_token is None:
        raise ConfigError("DISCORD_TOKEN is not set")
    return DiscordRest(
        settings.discord_token.get_secret_value(), settings.discord_api_base, metrics=metrics
    )


class DiscordAdapter(Lifecycle):
    """Discord's requests into the core. It posts through `rest` when given one (opened and
    closed by its owner: `quizbot serve`), else through a client of its own."""

    def __init__(
        self,
        quiz: Quiz,
        *,
        token: str,
        public_key: str | None = None,
        api_base: str | None = None,
        gateway_url: str | None = None,
        dev_guild: int | None = None,
        shard_count: int | None = None,
        shard_ids: Sequence[int] | None = None,
        admin_role: int | None = None,
        admin_ids: Iterable[str] = (),
        rest: DiscordRest | None = None,
        ack_deadline: float = 1.0,
        store_deadline: float = 2.3,
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
        if public_key is not None:
            verify_key(public_key)  # a bad key fails here, before anything starts
        self.service = quiz.service
        self.commands = quiz.commands
        self.dev_guild = dev_guild
        self._sync = sync_commands
        self.tasks = TaskSupervisor("discord")
        self._owns_rest = rest is None
        self.rest = rest or DiscordRest(
            token, api_base, metrics=quiz.service.metrics, connections=http_connections
        )
        self.chat = DiscordChat(self.rest)
        self.path = DiscordInteractions(
            quiz,
            self.rest,
            self.tasks,
            admin_role=admin_role,
            admin_ids=admin_ids,
            ack_deadline=ack_deadline,
            store_deadline=store_deadline,
        )
        self.endpoint: InteractionsEndpoint | None = None
        self.gateway: Gateway | None = None
        if public_key is not None:
            self.endpoint = InteractionsEndpoint(public_key, self.path, self.tasks)
        else:
            self.gateway = Gateway(
                self._from_gateway,
                token=token,
                api_base=api_base,
                gateway_url=gateway_url,
                shard_count=shard_count,
                shard_ids=shard_ids,
                guild_ready_timeout=guild_ready_timeout,
            )
        self.application_id: str | None = None
        self._closed = asyncio.Event()

    @classmethod
    def from_settings(cls, settings: Settings, quiz: Quiz, **overrides: Any) -> DiscordAdapter:
        """From `Settings`: DISCORD_TOKEN, DISCORD_PUBLIC_KEY, DISCORD_API_BASE,
        DISCORD_GATEWAY_URL, QUIZBOT_DISCORD_DEV_GUILD, QUIZBOT_DISCORD_SHARD_COUNT,
        QUIZBOT_DISCORD_SHARD_IDS, QUIZBOT_DISCORD_ADMIN_ROLE, QUIZBOT_ADMINS."""
        if settings.discord_token is None:
            raise ConfigError("DISCORD_TOKEN is not set")
        options: dict[str, Any] = {
            "token": settings.discord_token.get_secret_value(),
            "public_key": settings.discord_public_key,
            "api_base": settings.discord_api_base,
            "gateway_url": settings.discord_gateway_url,
            "dev_guild": settings.discord_dev_guild,
            "shard_count": settings.discord_shard_count,
            "shard_ids": parse_shard_ids(settings.discord_shard_ids),
            "admin_role": settings.discord_admin_role,
            "admin_ids": settings.admin_ids,
        }
        options.update(overrides)
        return cls(quiz, **options)

    @property
    def http_mode(self) -> bool:
        return self.endpoint is not None

    # -- lifecycle -----------------------------------------------------------------------

    async def initialize(self) -> None:
        """Check the token (and find the application id), sync `/quiz`, connect."""
        if self.gateway is not None:
            self.gateway.hook()  # a discord.py without the hook point stops here
        await self.rest.initialize()
        try:
            self.application_id = await self._application_id()
            if self._sync:
                await self.sync_commands()
            if self.gateway is not None:
                await self.gateway.initialize()
        except BaseException:
            if self._owns_rest:
                await self.rest.shutdown()
            raise

    async def shutdown(self) -> None:
        """No new interactions; answer the ones in flight (the REST client stays open for
        the core's work when its owner passed it in)."""
        try:
            if self.gateway is not None:
                await self.gateway.shutdown()
            await self.tasks.shutdown(timeout=5)
            if self._owns_rest:
                await self.service.drain_updates()  # count edits still need the client
        finally:
            if self._owns_rest:
                await self.rest.shutdown()
            self._closed.set()

    def mount(self, app: web.Application, path: str = PATH) -> None:
        """HTTP mode: serve Discord's interactions at `path` on `app`."""
        if self.endpoint is None:
            raise ConfigError("the Discord HTTP endpoint needs DISCORD_PUBLIC_KEY")
        self.endpoint.mount(app, path)

    async def wait_until_ready(self, timeout: float | None = None) -> None:
        """Gateway mode: until READY came; HTTP mode: at once."""
        if self.gateway is not None:
            await self.gateway.wait_until_ready(timeout)

    async def healthy(self) -> bool:
        """For /healthz: the gateway is connected and READY (gateway mode), or the REST
        client is open (HTTP mode)."""
        if self.gateway is not None:
            return self.gateway.healthy()
        return self.rest.started

    async def wait_closed(self) -> None:
        """Until the gateway connection ends (`quizbot serve` exits for a restart then);
        in HTTP mode, until the adapter is closed."""
        if self.gateway is not None:
            await self.gateway.wait_closed()
        else:
            await self._closed.wait()

    async def idle(self) -> None:
        """Until every interaction taken so far is answered (tests)."""
        await self.tasks.drain()

    # -- gateway -------------------------------------------------------------------------

    def _from_gateway(self, data: Any) -> None:
        self.tasks.spawn(self._gateway_interaction(data), name="discord-interaction")

    async def _gateway_interaction(self, data: Any) -> None:
        handling = self.path.handle(data)
        del data  # the decoded frame is freed once read (see `read_interaction`)
        try:
            handled = await handling
        except Malformed as exc:
            self.path.dropped(exc)
            return
        except Exception as exc:
            self.path.problems.problem(
                problem_key("discord gateway", exc), "Discord: an interaction failed", exc=exc
            )
            return
        if handled.target is None or handled.response is None:
            return
        responded = await Webhook(self.rest, handled.target).respond(handled.response)
        if handled.later is not None:
            await handled.later(responded)

    # -- start-up ------------------------------------------------------------------------

    async def _application_id(self) -> str:
        """The application's id (for command sync); checks the token on the way."""
        try:
            app = await self.rest.call("GET", "/oauth2/applications/@me", attempts=2)
        except PlatformError as exc:
            if exc.status == 401:
                raise ConfigError(TOKEN_REJECTED) from None
            raise ConfigError(
                f"cannot reach Discord's API at {self.rest.api_base} ({exc.reason}); check the "
                "network, or DISCORD_API_BASE if you set it"
            ) from None
        return str(app["id"])

    async def sync_commands(self) -> list[Any]:
        """Register `/quiz` (``PUT`` of the application's commands): on the development
        guild (at once) when one is set, else globally (up to an hour to show)."""
        where = f"/guilds/{self.dev_guild}" if self.dev_guild is not None else ""
        path = f"/applications/{self.application_id}{where}/commands"
        synced = await self.rest.call("PUT", path, [quiz_command(self.commands)])
        count = len(synced) if isinstance(synced, list) else 0
        if self.dev_guild is not None:
            log.info("synced %d command(s) to guild %s", count, self.dev_guild)
        else:
            log.info("synced %d global command(s)", count)
        return synced if isinstance(synced, list) else []


__all__ = ["DiscordAdapter", "discord_rest", "parse_shard_ids"]
