"""`/quiz practice [topic]`: private questions chosen by spaced repetition, never scored.

Each (member, question) has a Leitner card: a wrong answer puts it in box 1 (due at
once, so it comes back after one other question), a right one moves it up a box, due
later (intervals below). A practice question is the most urgent due card (lowest box,
then longest overdue), else an unseen question (easiest first), else — nothing due, all
seen — the card due soonest ("reviewing ahead"). The question just answered is not asked
twice in a row while anything else can be.

A practice post is a `Post` of kind PRACTICE for one member, opened without a channel
message and sent as a private reply with answer buttons. The answer goes through the
normal `record_answer` path; storage updates the card and closes the post in the same
transaction (no reveal: the private outcome carries the explanation).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

from bot.bank import QuestionBank
from bot.basics import TOPIC_OPTION
from bot.commands import Command, Invocation, Reply
from bot.domain import (
    AnswerOutcome,
    AnswerStatus,
    ChannelRef,
    Locale,
    Post,
    PostKind,
    Question,
    UserRef,
)
from bot.errors import UserFacingError
from bot.features import Feature, Parts
from bot.i18n import N_, translator
from bot.messages import Message
from bot.quiz import NO_QUESTIONS, QuizService
from bot.render import outcome_message, question_message

# Box -> how long after an answer the card is due again.
INTERVALS = {
    1: timedelta(0),
    2: timedelta(days=1),
    3: timedelta(days=3),
    4: timedelta(days=7),
    5: timedelta(days=14),
}
TOP_BOX = max(INTERVALS)


@dataclass(frozen=True, slots=True)
class PracticeCard:
    question_id: str
    box: int
    due_at: datetime
    last_answered_at: datetime


def review(box: int | None, correct: bool, at: datetime) -> tuple[int, datetime]:
    """A card's box and due time after an answer (`box` None: the first answer)."""
    new = min((box or 1) + 1, TOP_BOX) if correct else 1
    return new, at + INTERVALS[new]


class Pick(StrEnum):
    DUE = "due"  # a card whose time has come
    NEW = "new"  # never practised
    AHEAD = "ahead"  # nothing due and nothing new: the card due soonest


@dataclass(frozen=True, slots=True)
class Choice:
    question: Question
    pick: Pick
    card: PracticeCard | None = None


def choose(
    bank: QuestionBank,
    cards: Sequence[PracticeCard],
    now: datetime,
    rng: random.Random,
    topic: str | None = None,
) -> Choice | None:
    """The next practice question for a member with `cards`; None for an unknown topic."""
    candidates = {q.id: q for q in bank if topic is None or q.topic == topic}
    if not candidates:
        return None
    mine = [c for c in cards if c.question_id in candidates]
    last = max(cards, key=lambda c: c.last_answered_at).question_id if cards else None
    due = sorted(
        (c for c in mine if c.due_at <= now),
        key=lambda c: (c.box, c.due_at, c.question_id),
    )
    fresh = [c for c in due if c.question_id != last]
    if fresh:
        return Choice(candidates[fresh[0].question_id], Pick.DUE, fresh[0])
    seen = {c.question_id for c in mine}
    unseen = [q for q in candidates.values() if q.id not in seen]
    if unseen:
        easiest = min(q.difficulty for q in unseen)
        pool = sorted((q for q in unseen if q.difficulty == easiest), key=lambda q: q.id)
        return Choice(rng.choice(pool), Pick.NEW)
    if due:  # only the question just answered is due
        return Choice(candidates[due[0].question_id], Pick.DUE, due[0])
    ahead = sorted(mine, key=lambda c: (c.question_id == last, c.due_at, c.box, c.question_id))
    return Choice(candidates[ahead[0].question_id], Pick.AHEAD, ahead[0])


class PracticeRepository(Protocol):
    async def cards(self, user: UserRef) -> list[PracticeCard]:
        """Every card of a member."""
        ...

    async def cards_of(self, users: Sequence[UserRef]) -> dict[str, list[PracticeCard]]:
        """`cards` of many members of one workspace, by member key (none: absent)."""
        ...

    async def open_post(
        self, channel: ChannelRef, user: UserRef, question: Question, locale: Locale, now: datetime
    ) -> Post:
        """Open a practice post for `user` (no platform message); earlier open practice
        posts of theirs are closed. The question version must be saved."""
        ...


class Practice:
    """The practice use case: pick, open and word a member's next private question."""

    def __init__(self, service: QuizService, cards: PracticeRepository) -> None:
        self.service = service
        self.cards = cards

    async def next_question(
        self, channel: ChannelRef, user: UserRef, locale: Locale, topic: str | None = None
    ) -> tuple[Post, Choice]:
        service = self.service
        now = service.clock.now()
        settings = await service.store.settings.get(channel)
        pool = await service.pools.for_channel(channel, settings)
        choice = choose(pool, await self.cards.cards(user), now, service.rng, topic)
        if choice is None and topic is None:
            raise UserFacingError(translator(locale)(NO_QUESTIONS))
        if choice is None:
            t = translator(locale)
            topics = pool.topics()
            raise UserFacingError(
                t(
                    "Unknown topic {topic!r}. Topics: {topics}. Example: /quiz practice {example}",
                    topic=topic,
                    topics=", ".join(topics),
                    example=topics[0] if topics else "",
                )
            )
        await service.store.questions.save(choice.question)
        post = await self.cards.open_post(channel, user, choice.question, locale, now)
        return post, choice

    async def command(self, service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        topic = args[0] if args else None
        post, choice = await self.next_question(inv.channel, inv.user, inv.locale, topic)
        return [Reply(practice_message(post, choice, inv.locale), private=True)]


def practice_message(post: Post, choice: Choice, locale: Locale) -> Message:
    """The private question with its answer buttons (which carry the post id)."""
    t = translator(locale)
    msg = question_message(post, choice.question, "UTC")  # no close time: the zone is unused
    if choice.pick is Pick.NEW:
        note = t("New question")
    elif choice.pick is Pick.DUE and choice.card is not None:
        note = t("Review · box {box} of {top}", box=choice.card.box, top=TOP_BOX)
    else:
        box = choice.card.box if choice.card is not None else 1
        note = t("Nothing is due: reviewing ahead · box {box} of {top}", box=box, top=TOP_BOX)
    return replace(msg, footer=" · ".join((note, t("private, never scored"))))


def practice_outcome(outcome: AnswerOutcome, locale: Locale) -> Message | None:
    """The private reply to a practice answer (an `OutcomeRenderer` for `QuizService`)."""
    post = outcome.post
    if post is None or post.kind is not PostKind.PRACTICE or outcome.question is None:
        return None
    t = translator(locale)
    if outcome.status is AnswerStatus.CLOSED:
        return Message(
            body=t("You already answered this practice question. Next one: /quiz practice")
        )
    if outcome.status is not AnswerStatus.RECORDED:
        return None
    when = (
        t("This question comes back in a day or more.")
        if outcome.correct
        else t("This question comes back soon.")
    )
    footer = " ".join((t("Practice: private, never scored."), when, t("Next one: /quiz practice")))
    return replace(outcome_message(outcome, locale), footer=footer)


def feature(parts: Parts) -> Feature:
    """`/quiz practice` and the wording of practice outcomes."""
    practice = Practice(parts.service, parts.store.practice)
    return Feature(
        "practice",
        commands=[
            Command(
                "practice",
                practice.command,
                "practice [topic]",
                N_("a private question just for you (not scored)"),
                options=(TOPIC_OPTION,),
            )
        ],
        outcome_renderers=[practice_outcome],
    )
