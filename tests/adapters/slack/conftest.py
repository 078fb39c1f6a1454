"""The real Bolt app and slack_sdk client against a fake Slack on 127.0.0.1, and the
adapter on the quiz `quizbot serve` builds (`tests.quiz.quiz_of`, with the features a test
needs)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import aiohttp
import pytest

from adapters.slack.app import SlackAdapter
from adapters.slack.chat import SlackChat
from adapters.slack.config import SlackConfig
from bot import basics
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.config import Settings
from bot.domain import ChannelRef, Platform, Post
from bot.features import FeatureFactory, Quiz
from bot.quiz import QuizService
from storage.store import SqlStore
from tests.adapters.served import endpoint_served
from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.fake_slack import APP_TOKEN, BOT_TOKEN, FakeSlack
from tests.quiz import quiz_of


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(team=rq.TEAM) as fake:
        yield fake


@pytest.fixture
def sleeps() -> list[float]:
    """What the rate-limit retry handler waited (it gets this instead of sleeping)."""
    return []


@pytest.fixture
async def slack_chat(fake_slack: FakeSlack, sleeps: list[float]) -> AsyncIterator[SlackChat]:
    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async with SlackChat(BOT_TOKEN, base_url=fake_slack.api_url, sleep=sleep) as chat:
        yield chat


COOLDOWN = timedelta(seconds=30)
SETTINGS = Settings(ask_cooldown=int(COOLDOWN.total_seconds()))  # as `serve`'s default

QuizWith = Callable[..., AbstractAsyncContextManager[Quiz]]


@pytest.fixture
def quiz_with(
    store: SqlStore, slack_chat: SlackChat, bank: QuestionBank, clock: FakeClock
) -> QuizWith:
    """``async with quiz_with(*features, **parts) as quiz``: the quiz with `features` (the
    basic commands when none are named) on this test's database, posting through the
    Slack client; `parts` as `tests.quiz.quiz_of` takes them (runner, settings…)."""

    def make(*features: FeatureFactory, **parts: Any) -> AbstractAsyncContextManager[Quiz]:
        return quiz_of(
            store,
            {Platform.SLACK: slack_chat},
            bank,
            clock,
            features=features or (basics.feature,),
            **{"settings": SETTINGS, **parts},
        )

    return make


@pytest.fixture
def slack_channel() -> ChannelRef:
    return ChannelRef(Platform.SLACK, rq.TEAM, rq.CHANNEL)


def make_config(fake: FakeSlack, *, socket: bool = False, **kw: Any) -> SlackConfig:
    return SlackConfig(
        bot_token=BOT_TOKEN,
        signing_secret=None if socket else rq.SIGNING_SECRET,
        app_token=APP_TOKEN if socket else None,
        api_url=fake.api_url,
        **kw,
    )


@dataclass
class SlackHttp:
    """The adapter in HTTP mode behind aiohttp on 127.0.0.1, and Slack's side of it."""

    fake: FakeSlack
    adapter: SlackAdapter
    quiz: Quiz
    url: str
    session: aiohttp.ClientSession
    responses: dict[str, int] = field(default_factory=dict)

    async def send(self, body: str, headers: dict[str, str]) -> tuple[int, str]:
        async with self.session.post(self.url, data=body.encode(), headers=headers) as resp:
            return resp.status, await resp.text()

    async def command(
        self,
        text: str,
        *,
        user: str = "U0ALICE",
        trigger_id: str | None = None,
        retry_num: int | None = None,
        channel: str = rq.CHANNEL,
    ) -> tuple[int, str]:
        form = rq.slash_command(
            text,
            user=user,
            channel=channel,
            response_url=self.fake.response_url(f"cmd-{user}"),
            trigger_id=trigger_id,
        )
        body = rq.form_body(form)
        return await self.send(body, rq.signed_headers(body, retry_num=retry_num))

    async def click(
        self,
        post_id: int,
        choice: int | str,
        *,
        user: str = "U0ALICE",
        trigger_id: str | None = None,
        retry_num: int | None = None,
    ) -> tuple[int, str]:
        payload = rq.block_actions(
            post_id,
            choice,
            user=user,
            response_url=self.fake.response_url(f"click-{user}"),
            trigger_id=trigger_id,
        )
        body = rq.interaction_body(payload)
        return await self.send(body, rq.signed_headers(body, retry_num=retry_num))

    async def event(self, body: dict[str, Any]) -> tuple[int, str]:
        """An Events API request (JSON), signed as Slack signs it."""
        text = json.dumps(body)
        headers = rq.signed_headers(text)
        headers["Content-Type"] = "application/json"
        return await self.send(text, headers)

    async def press(self, action_id: str, *, user: str) -> tuple[int, str]:
        """Click a button by its action id (`quiz:<kind>:<post>:<value>`)."""
        _, kind, post, value = action_id.split(":", 3)
        payload = rq.block_actions(
            int(post),
            value,
            user=user,
            action=kind,
            response_url=self.fake.response_url(f"click-{user}"),
        )
        body = rq.interaction_body(payload)
        return await self.send(body, rq.signed_headers(body))

    @property
    def service(self) -> QuizService:
        return self.quiz.service

    def private_to(self, user: str) -> list[str]:
        """The texts shown privately to `user` (response_url or chat.postEphemeral)."""
        out = [
            c.text
            for c in self.fake.calls_to("response_url")
            if c.args["name"].endswith(f"-{user}") and c.args.get("response_type") == "ephemeral"
        ]
        out += [c.text for c in self.fake.calls_to("chat.postEphemeral") if c.args["user"] == user]
        return out

    async def ask(self) -> Post:
        """`/quiz ask` and wait for the question to be posted; returns the open post."""
        status, _ = await self.command("ask")
        assert status == 200
        await self.adapter.idle()
        post = await self.service.open_post(ChannelRef(Platform.SLACK, rq.TEAM, rq.CHANNEL))
        assert post is not None and post.message is not None
        return post


SlackWith = Callable[..., AbstractAsyncContextManager[SlackHttp]]


@pytest.fixture
def slack_with(fake_slack: FakeSlack, slack_chat: SlackChat, quiz_with: QuizWith) -> SlackWith:
    """``async with slack_with(*features, **parts) as http``: the adapter in HTTP mode on
    the quiz ``quiz_with(*features, **parts)`` starts with it (U0ROOT in QUIZBOT_ADMINS)."""

    @asynccontextmanager
    async def run(*features: FeatureFactory, **parts: Any) -> AsyncIterator[SlackHttp]:
        config = make_config(fake_slack, admin_ids=frozenset({"U0ROOT"}))
        async with (
            quiz_with(*features, **parts) as quiz,
            SlackAdapter(quiz, slack_chat, config) as adapter,
            endpoint_served(adapter) as port,
            aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0),
                timeout=aiohttp.ClientTimeout(total=10),
            ) as session,
        ):
            yield SlackHttp(
                fake_slack, adapter, quiz, f"http://127.0.0.1:{port}/slack/events", session
            )
            await adapter.idle()

    return run


@pytest.fixture
async def http_slack(slack_with: SlackWith) -> AsyncIterator[SlackHttp]:
    """The adapter in HTTP mode on the quiz of the basic commands."""
    async with slack_with() as http:
        yield http
