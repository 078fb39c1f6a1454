"""Claiming many scheduled slots at once.

The same steps as `QuizService.ask` before it publishes -- read the channel's settings
and question history, pick a question (no repeat until the bank is exhausted, no topic
twice in a row), store the question version, insert the claimed post -- done for every
due slot in a few statements, so a thousand slots of one minute are claimed within a
second and the platform's rate limits pace only the sends. The UNIQUE (schedule, slot)
decides which instance won each slot.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from bot.domain import ChannelSettings, Post, Question, Schedule
from bot.quiz import QuizService
from bot.scheduling.ports import ScheduleStore, SlotClaim

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Claimed:
    """A slot this instance claimed, ready for `QuizService.publish`."""

    post: Post
    question: Question
    settings: ChannelSettings


async def claim_slots(
    service: QuizService,
    store: ScheduleStore,
    wanted: list[tuple[Schedule, datetime, datetime]],
    at: datetime,
    saved_versions: set[str],
) -> list[Claimed]:
    """Claim ``(schedule, slot, closes_at)`` for each wanted slot; returns the ones won.
    ``saved_versions`` remembers the question versions already stored by this process."""
    if not wanted:
        return []
    inputs = await store.claim_inputs([s.id for s, _, _ in wanted])
    picked: dict[int, tuple[Question, ChannelSettings]] = {}
    claims: list[SlotClaim] = []
    for schedule, slot, closes_at in wanted:
        if schedule.id not in inputs:
            continue  # deleted meanwhile
        settings, history = inputs[schedule.id]
        question = await service.pick(settings.channel, history, settings)
        if question is None:
            log.error("schedule %s: the question bank is empty", schedule.id)
            continue
        picked[schedule.id] = (question, settings)
        claims.append(
            SlotClaim(
                schedule.id,
                slot,
                closes_at,
                question.id,
                question.content_hash,
                question.answer,
                question.choice_count,
                settings.locale,
            )
        )
    for question, _ in picked.values():
        if question.content_hash not in saved_versions:
            await service.store.questions.save(question)
            saved_versions.add(question.content_hash)
    won = await store.claim_slots(claims, at)
    out = []
    for post in won:
        assert post.schedule_id is not None
        question, settings = picked[post.schedule_id]
        out.append(Claimed(post, question, settings))
    return out


__all__ = ["Claimed", "claim_slots"]
