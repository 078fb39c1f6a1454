"""Fixtures: a fake Discord, and the real adapter wired to a quiz service on the test
database (SQLite and PostgreSQL), in gateway mode (a real discord.py connection) or HTTP
mode (the bot's real aiohttp endpoint, signed requests)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from adapters.discord.adapter import DiscordAdapter
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.commands import CommandSet, core_commands
from bot.demos import DemoDispatcher, install_demos
from bot.domain import DemoJob, DemoResult, DemoState, Platform
from bot.generated import install_generated
from bot.imports import install_import_help
from bot.interactions import Interactions
from bot.ports import Chat
from bot.quiz import QuizService
from questions.families.source import FamilySource
from storage.demo_runs import SqlDemoRunRepository
from storage.store import SqlStore
from tests.adapters.discord.fake_discord import FakeDiscord
from tests.adapters.discord.helpers import endpoint_served
from tests.core.team import install_team

# Every test here talks to a real client over sockets: bound each one (a module's own
# timeout marker wins). pytest reads no `pytestmark` from a conftest, hence the hook.
TIMEOUT = 30.0
HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:  # the whole session's items: a conftest hook is not per directory
        if item.path.is_relative_to(HERE) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TIMEOUT))


Runner = Callable[..., AbstractAsyncContextManager[DiscordAdapter]]
MODES = ("gateway", "http")
both_modes = pytest.mark.parametrize("mode", MODES)


@pytest.fixture
def mode() -> str:
    """How interactions reach the bot; `both_modes` runs a test in each."""
    return "gateway"


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as f:
        yield f


@pytest.fixture
def chats() -> dict[str, Chat]:
    """Filled with the adapter's chat once it exists (the service keeps this mapping)."""
    return {}


@pytest.fixture
def discord_service(
    store: SqlStore, chats: dict[str, Chat], bank: QuestionBank, clock: FakeClock
) -> QuizService:
    return QuizService(
        store,
        chats,
        bank,
        clock,
        rng=random.Random(7),
        count_update_interval=0.0,
    )


@pytest.fixture
def run_adapter(
    fake: FakeDiscord, discord_service: QuizService, chats: dict[str, Chat], mode: str
) -> Runner:
    """``async with run_adapter(**options) as adapter``: a started adapter (READY in gateway
    mode; its endpoint served in HTTP mode) whose chat is the service's Discord chat
    (``commands=`` replaces the core's command set). A second one on the same database is
    a restart."""

    @asynccontextmanager
    async def run(**options: Any) -> AsyncIterator[DiscordAdapter]:
        settings: dict[str, Any] = {
            "token": "fake-token",
            "api_base": fake.api_base,
            "gateway_url": fake.gateway_url,
            "dev_guild": int(fake.guild_id),
            "guild_ready_timeout": 0.05,
        }
        if mode == "http":
            settings["public_key"] = fake.http.public_key
        commands = options.pop("commands", None) or core_commands()
        settings.update(options)
        adapter = DiscordAdapter(discord_service, commands, **settings)
        chats[Platform.DISCORD] = adapter.chat
        async with adapter:
            if adapter.http_mode:
                async with endpoint_served(adapter) as port:
                    fake.http.endpoint = f"http://127.0.0.1:{port}/discord/interactions"
                    yield adapter
            else:
                await adapter.wait_until_ready(timeout=10)
                yield adapter

    return run


# -- demos --------------------------------------------------------------------------------


class BankCatalog:
    """The demos the bank's questions name (the real registry lives in the runner)."""

    def __init__(self, bank: QuestionBank) -> None:
        self._ids = bank.demos()

    def ids(self) -> list[str]:
        return self._ids

    def check(self, demo: str, params: Mapping[str, object]) -> Mapping[str, Any]:
        return dict(params)


class InstantRunner:
    """A runner at the edge: every demo succeeds at once with a short report."""

    enabled = True

    def __init__(self) -> None:
        self.jobs: list[DemoJob] = []

    async def submit(self, job: DemoJob) -> None:
        self.jobs.append(job)

    async def result(self, run_id: int, timeout: float) -> DemoResult | None:
        job = next(j for j in self.jobs if j.run_id == run_id)
        return DemoResult(
            run_id, job.demo, DemoState.SUCCEEDED, "simulated", report=f"report of {job.demo}"
        )


class DemoKit:
    def __init__(self, service: QuizService) -> None:
        self.runner = InstantRunner()
        runs = SqlDemoRunRepository(service.store.sessions)  # type: ignore[attr-defined]
        self.dispatcher = DemoDispatcher(service, runs, self.runner, BankCatalog(service.bank))
        self.dispatcher.attach()
        self.commands: CommandSet = core_commands()
        self.interactions = Interactions(service)
        install_demos(self.commands, self.interactions, self.dispatcher)

    def options(self) -> dict[str, Any]:
        return {"commands": self.commands, "interactions": self.interactions}


@pytest.fixture
async def demos(discord_service: QuizService) -> AsyncIterator[DemoKit]:
    kit = DemoKit(discord_service)
    yield kit
    await kit.dispatcher.aclose()


# -- generated questions ------------------------------------------------------------------


class GeneratedKit:
    """Generated questions and their typed answers, wired as `build_core` wires them."""

    def __init__(self, service: QuizService) -> None:
        service.generated = FamilySource()
        self.commands: CommandSet = core_commands()
        self.interactions = Interactions(service)
        install_generated(self.commands, self.interactions, service)

    def options(self) -> dict[str, Any]:
        return {"commands": self.commands, "interactions": self.interactions}


@pytest.fixture
def generated(discord_service: QuizService) -> GeneratedKit:
    return GeneratedKit(discord_service)


# -- team packs ---------------------------------------------------------------------------


class TeamKit:
    """Team packs wired as `build_core` wires them (review, submit, flags, packs, mydata,
    `/quiz import`), on the adapter's interactions; `enable_files` takes question files."""

    def __init__(self, service: QuizService) -> None:
        self.commands: CommandSet = core_commands()
        self.interactions = Interactions(service)
        _, self.importer = install_team(self.commands, self.interactions, service)
        install_import_help(self.commands)

    def options(self) -> dict[str, Any]:
        return {"commands": self.commands, "interactions": self.interactions}

    def enable_files(self, adapter: DiscordAdapter) -> None:
        adapter.enable_imports(self.importer)


@pytest.fixture
def team(discord_service: QuizService) -> TeamKit:
    return TeamKit(discord_service)
