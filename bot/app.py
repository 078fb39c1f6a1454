"""The composition root: wires settings, storage, the question bank, chats and the runner
(`build_core`), and runs the platforms that have credentials (`serve`).

This module (with `bot.cli`) is the only part of `bot` allowed to import `storage`,
`adapters`, `questions` and `gpu_runner`.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import random
import signal
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from bot import (
    basics,
    clinic_flow,
    dashboard,
    demos,
    flags,
    generated,
    home,
    imports,
    live,
    mydata,
    packs,
    practice,
    report,
    review,
    scheduling,
    seasons,
    submit,
    teams,
)
from bot.bank import QuestionBank
from bot.clock import Clock, SystemClock
from bot.config import RunnerKind, Settings, dashboard_problems
from bot.deliveries import Deliveries
from bot.domain import Locale, Platform
from bot.errors import ConfigError, QuizError
from bot.features import FeatureFactory, Parts, Quiz, Registry
from bot.interactions import Interactions
from bot.metrics import MetricsRegistry, QuizMetrics
from bot.pools import QuestionPools
from bot.ports import Chat, FeatureStore, QuestionSource, Runner
from bot.quiz import QuizService

if TYPE_CHECKING:
    from adapters.web import WebServer
    from storage.store import SqlStore


log = logging.getLogger(__name__)

# Every feature of the quiz, in the order `/quiz help` lists their commands.
FEATURES: tuple[FeatureFactory, ...] = (
    basics.feature,
    generated.feature,
    review.feature,
    submit.feature,
    flags.feature,
    packs.feature,
    mydata.feature,
    imports.feature,
    clinic_flow.feature,
    demos.feature,
    practice.feature,
    home.feature,
    report.feature,
    live.feature,
    scheduling.feature,
    seasons.feature,
    teams.feature,
    dashboard.feature,
)


@dataclass(frozen=True, slots=True)
class Core:
    """What `serve` runs: the quiz, with its store, settings, metrics and HTTP server."""

    quiz: Quiz
    settings: Settings
    bank: QuestionBank
    store: SqlStore
    metrics: QuizMetrics
    web: WebServer  # /healthz, /metrics, the HTTP modes' routes; started by `serve`

    @property
    def service(self) -> QuizService:
        return self.quiz.service


def database_url(settings: Settings) -> str:
    from storage.engine import default_url, normalize_url

    return normalize_url(settings.database_url) if settings.database_url else default_url()


@asynccontextmanager
async def open_store(settings: Settings, clock: Clock | None = None) -> AsyncIterator[SqlStore]:
    """The database (the embedded SQLite file upgrades itself; PostgreSQL must be at head:
    `quizbot db upgrade`)."""
    from storage.refs import ChannelDefaults
    from storage.store import SqlStore

    url = database_url(settings)
    defaults = ChannelDefaults(settings.default_locale, settings.default_timezone)
    async with SqlStore(
        url, clock=clock, migrate=url.startswith("sqlite"), defaults=defaults
    ) as store:
        yield store


def load_bank(settings: Settings) -> QuestionBank:
    from questions.loader import load_bank as load

    return load(settings.questions_path)


@asynccontextmanager
async def open_runner(settings: Settings) -> AsyncIterator[Runner]:
    """The runner QUIZBOT_RUNNER asks for (demos and the memory clinic), started and
    stopped with the bot. Neither torch nor matplotlib is imported here: only the
    runner's children do."""
    if settings.runner is RunnerKind.OFF:
        from bot.demo_runner import OffRunner

        yield OffRunner()
        return
    from gpu_runner.demos import default_registry

    catalog = default_registry()
    if settings.runner is RunnerKind.CELERY:
        from gpu_runner.celery_runner import CeleryRunner, make_celery_app

        yield CeleryRunner(
            make_celery_app(settings.celery_broker_url),
            registry=catalog,
            clinic_max_bytes=settings.clinic_max_bytes,
        )
        return
    from gpu_runner.executor import ExecutorConfig
    from gpu_runner.local import LocalRunner

    async with LocalRunner(
        config=ExecutorConfig(demo_user=settings.demo_user),
        registry=catalog,
        clinic_max_bytes=settings.clinic_max_bytes,
    ) as runner:
        yield runner


@asynccontextmanager
async def assemble(
    store: FeatureStore,
    chats: Mapping[str, Chat],
    bank: QuestionBank,
    clock: Clock,
    settings: Settings,
    *,
    runner: Runner | None = None,
    metrics: QuizMetrics | None = None,
    rng: random.Random | None = None,
    count_update_interval: float = 1.0,
    generated: QuestionSource | bool | None = True,
    features: Sequence[FeatureFactory] = FEATURES,
    **parts: Any,
) -> AsyncIterator[Quiz]:
    """The quiz on `store`: the service, every feature in `features`, and their services
    started; stopped in reverse (features' work first, then pending edits). `serve` and
    the tests build it the same way; `parts` overrides what features are given
    (`Parts` fields: `checker`, `reader`, `demos`)."""
    from bot.demo_runner import OffRunner
    from gpu_runner.demos import default_registry
    from questions.families.source import FamilySource
    from questions.team import TeamQuestions

    metrics = metrics or QuizMetrics(MetricsRegistry())
    registry = Registry()
    service = QuizService(
        store,
        chats,
        bank,
        clock,
        rng=rng,
        count_update_interval=count_update_interval,
        metrics=metrics,
        ask_cooldown=timedelta(seconds=settings.ask_cooldown),
        default_locale=Locale.parse(settings.default_locale) or Locale.EN,
        generated=FamilySource() if generated is True else generated or None,
        pools=QuestionPools(bank, store.team),
        hooks=registry,
    )
    formats = TeamQuestions()  # the bank's validator with the team rules; the file formats
    given = {"checker": formats, "reader": formats, "demos": default_registry(), **parts}
    kit = Parts(service, store, clock, settings, registry, metrics, runner or OffRunner(), **given)
    for make in features:
        registry.add(make(kit))
    async with AsyncExitStack() as stack:
        stack.push_async_callback(service.drain_updates)
        for work in registry.services:
            await stack.enter_async_context(work)
        deliveries = await stack.enter_async_context(Deliveries(store.deliveries, clock, metrics))
        yield Quiz(service, registry, Interactions(service, registry), deliveries)


@asynccontextmanager
async def build_core(
    settings: Settings,
    chats: Mapping[str, Chat],
    *,
    clock: Clock | None = None,
    rng: random.Random | None = None,
    count_update_interval: float = 1.0,
    metrics: QuizMetrics | None = None,
) -> AsyncIterator[Core]:
    """The store, the runner and the quiz, for `serve`; stopped in reverse order. `chats`
    holds every platform's client before this is entered: the scheduler's catch-up posts
    at once."""
    from adapters.web import WebServer
    from storage.refs import ChannelDefaults
    from storage.store import SqlStore

    clock = clock or SystemClock()
    bank = load_bank(settings)
    url = database_url(settings)
    metrics = metrics or QuizMetrics(MetricsRegistry())
    async with AsyncExitStack() as stack:
        # The embedded SQLite default upgrades itself; PostgreSQL runs `quizbot db upgrade`.
        store = await stack.enter_async_context(
            SqlStore(
                url,
                clock=clock,
                migrate=url.startswith("sqlite"),
                defaults=ChannelDefaults(settings.default_locale, settings.default_timezone),
                observer=metrics,
            )
        )
        metrics.answers_waiting.track(lambda: store.answers.waiting)
        runner = await stack.enter_async_context(open_runner(settings))
        quiz = await stack.enter_async_context(
            assemble(
                store,
                chats,
                bank,
                clock,
                settings,
                runner=runner,
                metrics=metrics,
                rng=rng,
                count_update_interval=count_update_interval,
            )
        )
        web = WebServer(
            metrics.registry,
            port=settings.http_port,
            checks={**quiz.registry.checks, "database": store.ping},
            aborted_body=lambda reason: metrics.http_aborted_bodies.inc(reason=reason),
        )
        yield Core(quiz, settings, bank, store, metrics, web)


async def serve(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Run until `stop` is set (SIGINT/SIGTERM when not given) or an adapter ends."""
    from adapters.slack import SlackAdapter, SlackChat, SlackConfig

    slack = SlackConfig.from_settings(settings)
    if settings.discord_public_key is not None and settings.discord_token is None:
        raise ConfigError(
            "DISCORD_PUBLIC_KEY needs DISCORD_TOKEN too: questions are posted with the bot "
            "token (Developer Portal > your application > Bot > Reset Token)"
        )
    if slack is None and settings.discord_token is None:
        raise ConfigError(
            "no platform credentials: set SLACK_BOT_TOKEN (+ SLACK_APP_TOKEN for Socket Mode "
            "or SLACK_SIGNING_SECRET for HTTP mode) for Slack, or DISCORD_TOKEN for Discord; "
            "`quizbot play` runs in the terminal without any"
        )
    if problems := dashboard_problems(settings):
        raise ConfigError("the dashboard is not configured: " + "; ".join(problems))
    stop = stop or _stop_on_signals()
    metrics = QuizMetrics(MetricsRegistry())
    chats: dict[str, Chat] = {}
    async with AsyncExitStack() as stack:
        # 1. The platforms' outbound clients: every chat is registered before the core
        # starts (the scheduler's catch-up posts at once) and closed after it stops.
        tokens = None
        if slack is not None:
            if slack.multi_workspace:
                from adapters.slack.tokens import WorkspaceTokens

                # The installs' store opens with the core: calls wait for it (`attach`).
                tokens = WorkspaceTokens(
                    None,
                    SystemClock(),
                    client_id=slack.client_id or "",
                    client_secret=slack.client_secret or "",
                )
            slack_chat = await stack.enter_async_context(
                SlackChat(slack.bot_token, tokens=tokens, base_url=slack.api_url, metrics=metrics)
            )
            chats[Platform.SLACK] = slack_chat
        if settings.discord_token is not None:
            from adapters.discord import DiscordAdapter, DiscordChat, discord_rest

            rest = await stack.enter_async_context(discord_rest(settings, metrics))
            chats[Platform.DISCORD] = DiscordChat(rest)
        # 2. The core: store, runner, every feature and its background work.
        core = await stack.enter_async_context(build_core(settings, chats, metrics=metrics))
        # 3. The platforms' inbound side: stopped first, so no request arrives at a core
        # that is shutting down.
        ended: list[asyncio.Future[Any]] = []
        http_routes: list[Callable[[Any], None]] = []
        if slack is not None:
            if tokens is not None:
                tokens.attach(core.store.slack_installs)
            adapter = await stack.enter_async_context(
                SlackAdapter(
                    core.quiz,
                    slack_chat,
                    slack,
                    installs=core.store.slack_installs,
                    states=core.store.slack_states,
                )
            )
            core.web.add_check("slack", adapter.healthy)
            if not adapter.socket_mode:
                http_routes.append(adapter.mount)
            log.info(
                "Slack adapter running (%s mode, %s%s)",
                "Socket" if adapter.socket_mode else "HTTP",
                slack.mode,
                ": workspaces install at /slack/install" if slack.multi_workspace else "",
            )
        if settings.discord_token is not None:
            discord = await stack.enter_async_context(
                DiscordAdapter.from_settings(settings, core.quiz, rest=rest)
            )
            core.web.add_check("discord", discord.healthy)
            if discord.http_mode:
                http_routes.append(discord.mount)
            else:
                ended.append(asyncio.ensure_future(discord.wait_closed()))
            log.info(
                "Discord adapter running (%s mode)", "HTTP" if discord.http_mode else "gateway"
            )
        if settings.web_secret is not None:
            http_routes.append(
                _dashboard(
                    core,
                    settings,
                    slack_admin=adapter.admin_status if slack else None,
                    rest=rest if settings.discord_token else None,
                ).mount
            )
        for mount in http_routes:
            mount(core.web.app)  # before the server starts: aiohttp freezes its routes
        await stack.enter_async_context(core.web)
        stack.enter_context(settled_heap())
        log.info(
            "HTTP on port %d: %s",
            core.web.port,
            ", ".join(sorted({r.canonical for r in core.web.app.router.resources()})),
        )
        waiter: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
        await asyncio.wait([waiter, *ended], return_when=asyncio.FIRST_COMPLETED)
        for fut in [waiter, *ended]:
            fut.cancel()
        log.info("shutting down")
        if not stop.is_set():
            # Exit non-zero so a supervisor (systemd, Kubernetes) restarts the bot.
            raise QuizError("the Discord gateway connection ended; exiting for a restart")


def _dashboard(core: Core, settings: Settings, *, slack_admin: Any, rest: Any) -> Any:
    """The dashboard on `serve`'s HTTP server (QUIZBOT_WEB_SECRET set and checked)."""
    from adapters.web.dashboard import OAuthApp, build_dashboard

    assert settings.web_secret is not None and settings.public_url is not None
    slack = discord = None
    if settings.slack_client_id and settings.slack_client_secret:
        secret = settings.slack_client_secret.get_secret_value()
        slack = OAuthApp(settings.slack_client_id, secret, settings.slack_api_url)
    if settings.discord_client_id and settings.discord_client_secret:
        secret = settings.discord_client_secret.get_secret_value()
        discord = OAuthApp(settings.discord_client_id, secret, rest.api_base)

    async def bot_guilds() -> set[str]:
        """The servers the bot is in (a sign-in keeps only those), 200 a page."""
        found: list[str] = []
        for _ in range(100):
            after = found[-1] if found else "0"
            page = await rest.call("GET", f"/users/@me/guilds?limit=200&after={after}")
            found += [str(g["id"]) for g in page]
            if len(page) < 200:
                break
        return set(found)

    role = settings.discord_admin_role
    admins: dict[Platform, Any] = {}
    if slack_admin is not None:
        admins[Platform.SLACK] = slack_admin
    if rest is not None:
        from adapters.discord.admins import DiscordAdmins

        admins[Platform.DISCORD] = DiscordAdmins(
            rest,
            core.quiz.service.clock,
            admin_role=str(role) if role is not None else None,
            admin_ids=settings.admin_ids,
        )
    return build_dashboard(
        core.quiz,
        core.store,
        core.store.web,
        secret=settings.web_secret.get_secret_value(),
        public_url=settings.public_url,
        slack=slack,
        discord=discord,
        bot_guilds=bot_guilds if rest is not None else None,
        admins=admins,
    )


# How many collections of the middle generation between two full ones (CPython: 10).
FULL_COLLECTION_EVERY = 100


@contextlib.contextmanager
def settled_heap() -> Iterator[None]:
    """While serving: the garbage collector kept off the start-up heap and out of bursts.

    Everything built at start (question bank, ORM, discord.py) is frozen: no collection
    scans it again. A full collection still scans every other object, and under a burst of
    clicks those are the requests in flight (about 80 objects each in aiohttp, asyncio and
    the click's path). With the start-up heap frozen, CPython's brake on full collections
    (the objects promoted since the last one must reach a quarter of the older ones) no
    longer holds: one came after every 10 collections of the middle generation, twice in
    a burst of 1,000 clicks at 30-60 ms each (bench/discord_interactions.py). One after
    every 100 keeps them out of a burst; cyclic garbage waits a little longer to be freed.
    """
    previous = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(previous[0], previous[1], FULL_COLLECTION_EVERY)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    return stop
