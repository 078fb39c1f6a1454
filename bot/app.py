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
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from bot.bank import QuestionBank
from bot.clinic_flow import Clinic, register_clinic_command
from bot.clock import Clock, SystemClock
from bot.commands import CommandSet, core_commands
from bot.config import Settings
from bot.deliveries import Deliveries
from bot.demos import DemoDispatcher, install_demos
from bot.domain import DemoPolicy, Locale, Platform
from bot.errors import ConfigError, QuizError
from bot.flags import install_flags
from bot.generated import install_generated
from bot.imports import QuestionImport, install_import_help
from bot.interactions import Interactions
from bot.metrics import MetricsRegistry, QuizMetrics
from bot.mydata import install_mydata
from bot.packs import install_packs
from bot.pools import QuestionPools
from bot.ports import Chat
from bot.practice import install_practice
from bot.quiz import QuizService
from bot.report import add_report_command
from bot.review import install_review
from bot.scheduling import Scheduler, register_schedule_commands
from bot.submit import install_submit

if TYPE_CHECKING:
    from adapters.web import WebServer
    from storage.store import SqlStore


log = logging.getLogger(__name__)


@dataclass(slots=True)
class Core:
    settings: Settings
    service: QuizService
    commands: CommandSet
    interactions: Interactions
    deliveries: Deliveries
    bank: QuestionBank
    store: SqlStore
    dispatcher: DemoDispatcher
    clinic: Clinic
    scheduler: Scheduler
    metrics: QuizMetrics
    web: WebServer  # /healthz, /metrics (+ Slack's /slack/events); started by `serve`
    importer: QuestionImport  # question files sent to the bot (Slack DM, Discord, console)


def database_url(settings: Settings) -> str:
    from storage.engine import default_url, normalize_url

    return normalize_url(settings.database_url) if settings.database_url else default_url()


@asynccontextmanager
async def open_store(settings: Settings) -> AsyncIterator[SqlStore]:
    """The database alone, for command-line tools (the embedded SQLite file upgrades
    itself; PostgreSQL must be at head: `quizbot db upgrade`)."""
    from storage.refs import ChannelDefaults
    from storage.store import SqlStore

    url = database_url(settings)
    defaults = ChannelDefaults(settings.default_locale, settings.default_timezone)
    async with SqlStore(url, migrate=url.startswith("sqlite"), defaults=defaults) as store:
        yield store


def load_bank(settings: Settings) -> QuestionBank:
    from questions.loader import load_bank as load

    return load(settings.questions_path)


@asynccontextmanager
async def build_core(
    settings: Settings,
    chats: Mapping[str, Chat],
    *,
    clock: Clock | None = None,
    rng: random.Random | None = None,
    count_update_interval: float = 1.0,
) -> AsyncIterator[Core]:
    """Start the store and the quiz service; stop them in reverse order."""
    from adapters.web import WebServer
    from gpu_runner import open_runner
    from gpu_runner.demos import default_registry
    from questions.families.source import FamilySource
    from questions.team import TeamQuestions
    from storage.refs import ChannelDefaults
    from storage.store import SqlStore

    clock = clock or SystemClock()
    bank = load_bank(settings)
    url = database_url(settings)
    async with AsyncExitStack() as stack:
        metrics = QuizMetrics(MetricsRegistry())
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
            generated=FamilySource(),
            pools=QuestionPools(bank, store.team),
        )
        commands = core_commands()
        interactions = Interactions(service)
        install_generated(commands, interactions, service)
        team_formats = TeamQuestions()  # the bank's validator, team rules; the file formats
        review = install_review(commands, interactions, service, store.team)
        install_submit(commands, interactions, service, store.team, team_formats, review)
        install_flags(interactions, service, store.team)
        install_packs(commands)
        install_mydata(commands, interactions, service, store.members)
        importer = QuestionImport(store.team, team_formats, clock)
        install_import_help(commands)
        stack.push_async_callback(service.drain_updates)
        runner = await stack.enter_async_context(open_runner(settings))
        clinic = Clinic(runner, service)
        register_clinic_command(commands)

        # Attaches itself to reveals and resumes runs left pending by a previous process.
        async def schedule_policy(schedule_id: int) -> DemoPolicy | None:
            schedule = await store.schedules.get(schedule_id)
            return schedule.demo_policy if schedule is not None else None

        dispatcher = await stack.enter_async_context(
            DemoDispatcher(
                service,
                store.demo_runs,
                runner,
                default_registry(),
                schedule_policy=schedule_policy,
            )
        )
        install_demos(commands, interactions, dispatcher)
        install_practice(service, commands, store.practice)
        add_report_command(commands, store.reports)
        # start() catches up after downtime: reveals, resends, the latest missed slot.
        scheduler = await stack.enter_async_context(
            Scheduler(service, store.schedules, clock=clock, metrics=metrics)
        )
        register_schedule_commands(commands, scheduler)
        deliveries = await stack.enter_async_context(Deliveries(store.deliveries, clock, metrics))
        web = WebServer(
            metrics.registry,
            port=settings.http_port,
            checks={"scheduler": scheduler.healthy, "database": store.ping},
            aborted_body=lambda reason: metrics.http_aborted_bodies.inc(reason=reason),
        )
        yield Core(
            settings,
            service,
            commands,
            interactions,
            deliveries,
            bank,
            store,
            dispatcher,
            clinic,
            scheduler,
            metrics,
            web,
            importer,
        )


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
            slack_chat.metrics = core.metrics
            adapter = await stack.enter_async_context(
                SlackAdapter(
                    core.service,
                    core.commands,
                    slack_chat,
                    slack,
                    interactions=core.interactions,
                    deliveries=core.deliveries,
                )
            )
            adapter.enable_clinic(core.clinic, settings.clinic_max_bytes)
            from adapters.slack.files import QuestionFiles

            files = QuestionFiles(
                core.service, core.importer, adapter.admin_status, slack_chat.post_message
            )
            adapter.add_file_handler(files.accepts, files.handle)
            if not adapter.socket_mode:
                http_routes.append(adapter.mount)
            log.info("Slack adapter running (%s mode)", "Socket" if adapter.socket_mode else "HTTP")
        if settings.discord_token is not None:
            from adapters.discord import DiscordAdapter

            discord = DiscordAdapter.from_settings(
                settings,
                core.service,
                core.commands,
                interactions=core.interactions,
                deliveries=core.deliveries,
            )
            chats[Platform.DISCORD] = discord.chat
            discord.enable_clinic(core.clinic, settings.clinic_max_bytes)
            discord.enable_imports(core.importer)
            await stack.enter_async_context(discord)
            core.web.add_check("discord", discord.healthy)
            if discord.http_mode:
                http_routes.append(discord.mount)
            else:
                ended.append(asyncio.ensure_future(discord.wait_closed()))
            log.info(
                "Discord adapter running (%s mode)", "HTTP" if discord.http_mode else "gateway"
            )
        for mount in http_routes:
            mount(core.web.app)  # before the server starts: aiohttp freezes its routes
        if slack is not None:
            core.web.add_check("slack", adapter.healthy)
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
