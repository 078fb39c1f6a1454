"""In production no test calls `tick`: the feature's own timer wakes at each due step (and
looks once per `poll`). A one-question round on the system clock runs from the lobby to
the podium by itself."""

from __future__ import annotations

from datetime import timedelta

from bot import basics
from bot.bank import QuestionBank
from bot.clock import SystemClock
from bot.domain import Locale, Platform
from bot.features import Feature, Parts
from bot.live import LiveRounds, live_feature
from storage.store import SqlStore
from tests.fakes import RecordingChat
from tests.live.harness import ADMIN, CHANNEL
from tests.polling import eventually
from tests.quiz import quiz_of, service_of


async def test_the_timer_runs_a_round_without_ticks(store: SqlStore, bank: QuestionBank) -> None:
    clock = SystemClock()

    def timed(parts: Parts) -> Feature:
        rounds = LiveRounds(
            parts.service,
            parts.store.live,
            parts.clock,
            timer=True,
            lobby=timedelta(milliseconds=200),
            poll=0.05,
        )
        return live_feature(rounds)

    chat = RecordingChat()
    features = [basics.feature, timed]
    async with quiz_of(store, {Platform.SLACK: chat}, bank, clock, features=features) as quiz:
        rounds = service_of(quiz, LiveRounds)
        r = await rounds.start(
            CHANNEL, ADMIN, questions=1, seconds=1, topic=None, counted=False, locale=Locale.EN
        )
        await eventually(
            lambda: any(s.message and "podium" in s.message.title for s in chat.of("post")),
            timeout=10,
        )
        posts = [s.message.title for s in chat.of("post") if s.message is not None]
        threads = [s.message.title for s in chat.of("thread") if s.message is not None]
        assert sum("question 1 of 1" in t for t in posts) == 1
        assert sum(t.startswith("Results") for t in threads) == 1
        assert await store.live.active(CHANNEL) is None and r.id > 0
