"""The dashboard in a real browser: Playwright for Python (pytest-playwright) driving
Debian's chromium (`apt-get install -y chromium`; Playwright's own browsers are never
downloaded). One browser per session; the site, the fake Slack and the fake Discord run on
127.0.0.1 in a thread of their own (Playwright's sync API owns the test's thread).

Without chromium the tests skip, naming the install command; `.ci/run` installs it and
sets QUIZBOT_TEST_REQUIRE_BROWSER=1, which turns a missing browser into a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from playwright.sync_api import Browser, sync_playwright

from adapters.web.dashboard import OAuthApp
from bot.clinic import ClinicJob, ClinicResult, ProgressCallback
from bot.clock import FakeClock
from bot.domain import ChannelRef, Platform
from gpu_runner.executor import ExecutorConfig
from gpu_runner.local import LocalRunner
from tests.adapters.discord.fake_discord import FakeDiscord
from tests.adapters.discord.fake_oauth import CLIENT_ID as DISCORD_ID
from tests.adapters.discord.fake_oauth import CLIENT_SECRET as DISCORD_SECRET
from tests.adapters.slack.fake_oidc import CLIENT_ID as SLACK_ID
from tests.adapters.slack.fake_oidc import CLIENT_SECRET as SLACK_SECRET
from tests.adapters.slack.fake_slack import FakeSlack
from tests.dashboard.harness import Site, platform_admins, site_of

CHROMIUM = os.environ.get("QUIZBOT_TEST_CHROMIUM", "/usr/bin/chromium")
REQUIRED = os.environ.get("QUIZBOT_TEST_REQUIRE_BROWSER") == "1"
INSTALL = "apt-get install -y chromium"
SLACK_WS = ChannelRef(Platform.SLACK, "T0FAKE", "quiz")
GUILD = "811111111111111111"
DISCORD_WS = ChannelRef(Platform.DISCORD, GUILD, "700")
CONSOLE_WS = ChannelRef(Platform.CONSOLE, "console", "quiz")
T = TypeVar("T")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if Path(CHROMIUM).exists():
        return
    for item in items:
        if "browser" in item.nodeid.split("::")[0]:
            if REQUIRED:
                item.add_marker(pytest.mark.xfail(reason="no chromium", run=False, strict=True))
            else:
                item.add_marker(pytest.mark.skip(reason=f"no chromium: {INSTALL}"))


@pytest.fixture(scope="module")
def browser(browser_type_launch_args: dict[str, Any]) -> Iterator[Browser]:
    """chromium, for one module. Playwright's sync API keeps an event loop running in the
    test's thread while it is started, so it is stopped when the module's tests are done:
    pytest-xdist may hand this worker asyncio tests afterwards (pytest-playwright's own
    `browser` lives for the session)."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(**browser_type_launch_args)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="session")
def browser_type_launch_args() -> dict[str, Any]:
    if not Path(CHROMIUM).exists():
        if REQUIRED:
            pytest.fail(f"QUIZBOT_TEST_REQUIRE_BROWSER=1 but {CHROMIUM} is missing: {INSTALL}")
        pytest.skip(f"no chromium at {CHROMIUM}: {INSTALL}")
    return {
        "executable_path": CHROMIUM,
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    }


class HeldRunner(LocalRunner):
    """The local runner (a child of this host's fork server reads and replays the
    snapshot, as under `quizbot serve`), which a test may hold before a snapshot's replay
    starts, so its page is seen in progress."""

    def __init__(self) -> None:
        super().__init__(config=ExecutorConfig(torch=False, clinic_timeout=60.0))
        self.go = asyncio.Event()
        self.go.set()

    async def run_clinic(
        self, job: ClinicJob, progress: ProgressCallback | None = None
    ) -> ClinicResult:
        await self.go.wait()
        return await super().run_clinic(job, progress)


class Served:
    """The site and the fake platforms on a loop in another thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.tmp = Path(tempfile.mkdtemp(prefix="quizbot-browser-"))
        self._stop: asyncio.Event | None = None
        self._done: Any = None
        self.site: Site | None = None
        self.slack: FakeSlack | None = None
        self.discord: FakeDiscord | None = None
        self.runner: HeldRunner | None = None

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def start(self) -> None:
        ready = threading.Event()
        self._done = asyncio.run_coroutine_threadsafe(self._main(ready), self.loop)
        if not ready.wait(60):
            self._done.result(1)
            raise AssertionError("the site did not start")

    async def _main(self, ready: threading.Event) -> None:
        from questions.loader import load_bank
        from storage.store import SqlStore

        self._stop = asyncio.Event()
        clock = FakeClock()
        url = f"sqlite+aiosqlite:///{self.tmp / 'quizbot.db'}"
        async with (
            SqlStore(url, clock=clock, migrate=True) as store,
            FakeSlack() as slack,
            FakeDiscord() as discord,
            contextlib.AsyncExitStack() as stack,
        ):

            async def bot_guilds() -> set[str]:
                return {GUILD}

            self.runner = await stack.enter_async_context(HeldRunner())
            admins = await stack.enter_async_context(platform_admins(slack, discord, clock))

            async with site_of(
                store,
                load_bank(),
                clock,
                runner=self.runner,
                slack=OAuthApp(SLACK_ID, SLACK_SECRET, slack.api_url),
                discord=OAuthApp(DISCORD_ID, DISCORD_SECRET, discord.api_base),
                bot_guilds=bot_guilds,
                admins=admins,
                console_user="you",
                channels=(SLACK_WS, DISCORD_WS, CONSOLE_WS),
            ) as site:
                self.site, self.slack, self.discord = site, slack, discord
                ready.set()
                await self._stop.wait()

    def hold_clinic(self, held: bool) -> None:
        """Hold (True) or let go (False) the clinic's next replays."""
        runner = self.runner
        assert runner is not None

        async def switch() -> None:
            runner.go.clear() if held else runner.go.set()

        self.call(switch())

    def stop(self) -> None:
        if self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        if self._done is not None:
            self._done.result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        shutil.rmtree(self.tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def served() -> Iterator[Served]:
    s = Served()
    s.start()
    yield s
    s.stop()


SHOTS = Path(__file__).resolve().parents[3] / "docs" / "dashboard"
SHOOT = os.environ.get("QUIZBOT_SCREENSHOTS") == "1"  # rewrite docs/dashboard/*.png
