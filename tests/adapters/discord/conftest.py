"""Fixtures: a fake Discord, and the real adapter on the quiz `quizbot serve` builds
(`tests.quiz.quiz_of`, with the features a test needs) on the test database (SQLite and
PostgreSQL), in gateway mode (a real discord.py connection) or HTTP mode (the bot's real
aiohttp endpoint, signed requests)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from adapters.discord.adapter import DiscordAdapter
from bot import basics
from bot import demos as demo_features
from bot import generated as generated_questions
from bot.bank import QuestionBank
from bot.clinic import ClinicJob, ClinicResult, ProgressCallback
from bot.clock import FakeClock
from bot.demos import DemoDispatcher
from bot.domain import DemoJob, DemoResult, DemoState, Platform
from bot.features import FeatureFactory, Quiz
from bot.ports import Chat
from storage.store import SqlStore
from tests.adapters.discord.fake_discord import FakeDiscord
from tests.adapters.features import TEAM_FEATURES
from tests.adapters.served import endpoint_served
from tests.quiz import quiz_of, service_of

# Every test here talks to a real client over sockets: bound each one (a module's own
# timeout marker wins). pytest reads no `pytestmark` from a conftest, hence the hook. Longer
# than one wait (`tests.polling.WAIT`), so a wait that fails says what it waited for; a
# gateway's reconnect on a busy machine takes seconds.
TIMEOUT = 90.0
HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:  # the whole session's items: a conftest hook is not per directory
        if item.path.is_relative_to(HERE) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TIMEOUT))


Runner = Callable[..., AbstractAsyncContextManager[DiscordAdapter]]
QuizWith = Callable[..., AbstractAsyncContextManager[Quiz]]
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
    """Filled with the adapter's chat once it exists (the quiz keeps this mapping)."""
    return {}


@pytest.fixture
def quiz_with(
    store: SqlStore, chats: dict[str, Chat], bank: QuestionBank, clock: FakeClock
) -> QuizWith:
    """``async with quiz_with(*features, **parts) as quiz``: the quiz with `features` (the
    basic commands when none are named) on this test's database, posting through the
    adapter's chat; `parts` as `tests.quiz.quiz_of` takes them (runner, demos, settings…)."""

    def make(*features: FeatureFactory, **parts: Any) -> AbstractAsyncContextManager[Quiz]:
        return quiz_of(store, chats, bank, clock, features=features or (basics.feature,), **parts)

    return make


@pytest.fixture
def run_adapter(
    fake: FakeDiscord, quiz_with: QuizWith, chats: dict[str, Chat], mode: str
) -> Runner:
    """``async with run_adapter(quiz=…, **options) as adapter``: a started adapter (READY in
    gateway mode; its endpoint served in HTTP mode) on `quiz`, whose chat is the quiz's
    Discord chat. Without a quiz, a quiz of the basic commands is started with it and
    stopped after it: a second one on the same database is a restart."""

    @asynccontextmanager
    async def run(quiz: Quiz | None = None, **options: Any) -> AsyncIterator[DiscordAdapter]:
        settings: dict[str, Any] = {
            "token": "fake-token",
            "api_base": fake.api_base,
            "gateway_url": fake.gateway_url,
            "dev_guild": int(fake.guild_id),
            "guild_ready_timeout": 0.05,
        }
        if mode == "http":
            settings["public_key"] = fake.http.public_key
        settings.update(options)
        async with AsyncExitStack() as stack:
            if quiz is None:
                quiz = await stack.enter_async_context(quiz_with())
            adapter = DiscordAdapter(quiz, **settings)
            chats[Platform.DISCORD] = adapter.chat
            await stack.enter_async_context(adapter)
            if adapter.http_mode:
                port = await stack.enter_async_context(endpoint_served(adapter))
                fake.http.endpoint = f"http://127.0.0.1:{port}/discord/interactions"
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
    """A runner at the edge: every demo succeeds at once with a short report, and so does
    every memory clinic job."""

    enabled = True

    def __init__(self) -> None:
        self.jobs: list[DemoJob] = []
        self.clinic_jobs: list[ClinicJob] = []

    async def submit(self, job: DemoJob) -> None:
        self.jobs.append(job)

    async def result(self, run_id: int, timeout: float) -> DemoResult | None:
        job = next(j for j in self.jobs if j.run_id == run_id)
        return DemoResult(
            run_id, job.demo, DemoState.SUCCEEDED, "simulated", report=f"report of {job.demo}"
        )

    async def run_clinic(
        self, job: ClinicJob, progress: ProgressCallback | None = None
    ) -> ClinicResult:
        self.clinic_jobs.append(job)
        text = f"clinic report of {job.name}"
        return ClinicResult("Memory clinic", text, "", None, None)


@dataclass(frozen=True)
class DemoKit:
    """The quiz with demos, on a runner at the edge: what it ran, and the dispatcher the
    demos feature built."""

    quiz: Quiz
    runner: InstantRunner
    dispatcher: DemoDispatcher


@pytest.fixture
async def demos(quiz_with: QuizWith, bank: QuestionBank) -> AsyncIterator[DemoKit]:
    runner = InstantRunner()
    async with quiz_with(
        basics.feature, demo_features.feature, runner=runner, demos=BankCatalog(bank)
    ) as quiz:
        dispatcher = service_of(quiz, DemoDispatcher)
        yield DemoKit(quiz, runner, dispatcher)


# -- generated questions, team packs ------------------------------------------------------


@pytest.fixture
async def generated(quiz_with: QuizWith) -> AsyncIterator[Quiz]:
    """Generated questions and their typed answers, as `serve` wires them."""
    async with quiz_with(basics.feature, generated_questions.feature, generated=True) as quiz:
        yield quiz


@pytest.fixture
async def team(quiz_with: QuizWith) -> AsyncIterator[Quiz]:
    """Team packs, as `serve` wires them (`TEAM_FEATURES`)."""
    async with quiz_with(*TEAM_FEATURES) as quiz:
        yield quiz
