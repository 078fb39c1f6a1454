"""The quiz as the tests build it: `bot.app.assemble`, the function `quizbot serve` uses,
with fakes passed in (a recording chat, a fake clock, a runner at the edge) and the
features a test needs."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from bot.app import FEATURES, assemble
from bot.bank import QuestionBank
from bot.clock import Clock
from bot.config import Settings
from bot.domain import ChannelRef, Post
from bot.features import FeatureFactory, Quiz
from bot.ports import Chat, FeatureStore, QuestionSource, Runner
from bot.quiz import QuizService

# No ask cooldown: tests ask several questions in a row (tests of the cooldown set one).
SETTINGS = Settings(ask_cooldown=0)


@asynccontextmanager
async def quiz_of(
    store: FeatureStore,
    chats: Mapping[str, Chat],
    bank: QuestionBank,
    clock: Clock,
    *,
    features: Sequence[FeatureFactory] = FEATURES,
    settings: Settings = SETTINGS,
    runner: Runner | None = None,
    generated: QuestionSource | bool | None = None,
    seed: int = 7,
    wakeups: bool = False,
    **parts: Any,
) -> AsyncIterator[Quiz]:
    """The quiz on `store`, started; APScheduler's wake-ups off unless asked (tests
    reconcile)."""
    async with assemble(
        store,
        chats,
        bank,
        clock,
        settings,
        runner=runner,
        rng=random.Random(seed),
        count_update_interval=0.0,
        generated=generated,
        features=features,
        wakeups=wakeups,
        **parts,
    ) as quiz:
        yield quiz


__all__ = ["SETTINGS", "quiz_of"]


S = TypeVar("S")


def service_of(quiz: Quiz, kind: type[S]) -> S:
    """The service of `kind` a feature of `quiz` runs (the test needs it there)."""
    found = quiz.registry.service(kind)
    assert found is not None, f"no {kind.__name__} runs in this quiz"
    return found


async def asked(service: QuizService, channel: ChannelRef, **options: Any) -> Post:
    """`service.ask(channel, **options)`, which the test expects to post: the post."""
    post = await service.ask(channel, **options)
    assert post is not None
    return post
