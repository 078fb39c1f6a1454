"""The composition root: wires settings, storage, the question bank, chats and the runner.

This module (with `bot.cli`) is the only part of `bot` allowed to import `storage`,
`adapters`, `questions` and `gpu_runner`.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.bank import QuestionBank
from bot.clock import Clock, SystemClock
from bot.commands import CommandSet, core_commands
from bot.config import Settings
from bot.demos import DemoDispatcher, register_demo_commands
from bot.domain import DemoPolicy
from bot.metrics import MetricsRegistry, QuizMetrics
from bot.ports import Chat
from bot.practice import install_practice
from bot.quiz import QuizService
from bot.report import add_report_command
from bot.scheduling import Scheduler, register_schedule_commands

if TYPE_CHECKING:
    from adapters.web import WebServer
    from storage.store import SqlStore


@dataclass(slots=True)
class Core:
    settings: Settings
    service: QuizService
    commands: CommandSet
    bank: QuestionBank
    store: SqlStore
    dispatcher: DemoDispatcher
    scheduler: Scheduler
    metrics: QuizMetrics
    web: WebServer  # /healthz, /metrics (+ Slack's /slack/events); started by `serve`


def database_url(settings: Settings) -> str:
    from storage.engine import default_url, normalize_url

    return normalize_url(settings.database_url) if settings.database_url else default_url()


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
    from storage.refs import ChannelDefaults
    from storage.store import SqlStore

    clock = clock or SystemClock()
    bank = load_bank(settings)
    url = database_url(settings)
    async with AsyncExitStack() as stack:
        # The embedded SQLite default upgrades itself; PostgreSQL runs `quizbot db upgrade`.
        store = await stack.enter_async_context(
            SqlStore(
                url,
                clock=clock,
                migrate=url.startswith("sqlite"),
                defaults=ChannelDefaults(settings.default_locale, settings.default_timezone),
            )
        )
        metrics = QuizMetrics(MetricsRegistry())
        service = QuizService(
            store,
            chats,
            bank,
            clock,
            rng=rng,
            count_update_interval=count_update_interval,
            metrics=metrics,
        )
        stack.push_async_callback(service.drain_updates)
        runner = await stack.enter_async_context(open_runner(settings))

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
        commands = core_commands()
        register_demo_commands(commands, dispatcher)
        install_practice(service, commands, store.practice)
        add_report_command(commands, store.reports)
        # start() catches up after downtime: reveals, resends, the latest missed slot.
        scheduler = await stack.enter_async_context(
            Scheduler(service, store.schedules, clock=clock, metrics=metrics)
        )
        register_schedule_commands(commands, scheduler)
        web = WebServer(
            metrics.registry,
            port=settings.http_port,
            checks={"scheduler": scheduler.healthy, "database": store.ping},
        )
        yield Core(settings, service, commands, bank, store, dispatcher, scheduler, metrics, web)
