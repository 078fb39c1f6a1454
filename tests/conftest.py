"""Shared fixtures: a store on SQLite and on PostgreSQL, a fake clock, a recording chat."""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest

from bot import basics
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import ChannelRef, Platform, UserRef
from bot.features import Quiz
from bot.ports import Chat
from bot.quiz import QuizService
from storage.store import SqlStore
from tests.databases import dsn, reset_postgres
from tests.fakes import RecordingChat
from tests.quiz import quiz_of

T = TypeVar("T")
PG_ADMIN_URL = os.environ.get(
    "QUIZBOT_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)

pytest_plugins = ("pytester",)  # tests that run pytest itself (the per-directory timeouts)

REQUIRE_SERVICES = os.environ.get("QUIZBOT_TEST_REQUIRE_SERVICES") == "1"


def _pg_available() -> bool:
    import asyncpg

    async def probe() -> bool:
        try:
            conn = await asyncpg.connect(dsn(PG_ADMIN_URL), timeout=3)
        except (OSError, asyncpg.PostgresError):
            return False
        await conn.close()
        return True

    return run_sync(probe())


def run_sync(work: Coroutine[Any, Any, T]) -> T:
    """Run `work` to completion from a synchronous fixture, also while another event loop
    runs in this thread (Playwright's sync API keeps one): then in a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, work).result()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file, copied per test (migrating takes longer than copying)."""
    from storage.engine import create_engine, upgrade

    path = tmp_path_factory.mktemp("sqlite") / "template.db"

    async def migrate() -> None:
        engine = create_engine(f"sqlite+aiosqlite:///{path}")
        await upgrade(engine)
        await engine.dispose()  # the last close checkpoints the WAL into the file

    run_sync(migrate())
    return path


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A throw-away PostgreSQL database for this test session, migrated once."""
    if not _pg_available():
        if REQUIRE_SERVICES:
            pytest.fail(f"PostgreSQL is required but not reachable at {PG_ADMIN_URL}")
        pytest.skip("PostgreSQL not reachable")
    import asyncpg

    from storage.engine import create_engine, upgrade

    name = f"quizbot_test_{uuid.uuid4().hex[:8]}"
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    url = f"{base}/{name}"

    async def create() -> None:
        conn = await asyncpg.connect(dsn(PG_ADMIN_URL))
        await conn.execute(f'CREATE DATABASE "{name}"')
        # A throw-away database: no commit waits for its WAL to reach the disk.
        await conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
        await conn.close()
        engine = create_engine(url)
        await upgrade(engine)
        await engine.dispose()

    async def drop() -> None:
        conn = await asyncpg.connect(dsn(PG_ADMIN_URL))
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()

    run_sync(create())
    yield url
    run_sync(drop())


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A migrated, empty database URL on each backend."""
    if request.param == "sqlite":
        template = request.getfixturevalue("sqlite_template")
        path = tmp_path / "quizbot.db"
        shutil.copy(template, path)
        yield f"sqlite+aiosqlite:///{path}"
        return
    url = request.getfixturevalue("pg_url")
    run_sync(reset_postgres(url))
    yield url


Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(db_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """`cli(*argv)`: `quizbot` on the test's database, with no admins and no questions path
    from the environment; its exit code, stdout and stderr."""
    from bot.cli import main

    for name in ("QUIZBOT_ADMINS", "QUIZBOT_QUESTIONS_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("QUIZBOT_DATABASE_URL", db_url)

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def store(db_url: str, clock: FakeClock) -> AsyncIterator[SqlStore]:
    async with SqlStore(db_url, clock=clock) as s:
        yield s


@pytest.fixture(scope="session")
def bank() -> QuestionBank:
    from questions.loader import load_bank

    return load_bank()


@pytest.fixture
def chat() -> RecordingChat:
    return RecordingChat()


@pytest.fixture
async def quiz(
    store: SqlStore, chat: RecordingChat, bank: QuestionBank, clock: FakeClock
) -> AsyncIterator[Quiz]:
    """Every feature, wired as `quizbot serve` wires them, on a recording chat."""
    chats: dict[str, Chat] = {Platform.CONSOLE: chat, Platform.SLACK: chat, Platform.DISCORD: chat}
    async with quiz_of(store, chats, bank, clock) as q:
        yield q


@pytest.fixture
async def basic(
    store: SqlStore, chat: RecordingChat, bank: QuestionBank, clock: FakeClock
) -> AsyncIterator[Quiz]:
    """The quiz with only the basic commands (ask, close, boards, lang, help): no
    feature's reveal hooks."""
    chats: dict[str, Chat] = {Platform.CONSOLE: chat, Platform.SLACK: chat, Platform.DISCORD: chat}
    async with quiz_of(store, chats, bank, clock, features=[basics.feature]) as q:
        yield q


@pytest.fixture
def service(basic: Quiz) -> QuizService:
    return basic.service


@pytest.fixture
def channel() -> ChannelRef:
    return ChannelRef(Platform.SLACK, "T1", "C1")


def user(name: str) -> UserRef:
    return UserRef(Platform.SLACK, "T1", f"U{name.upper()}", name)
