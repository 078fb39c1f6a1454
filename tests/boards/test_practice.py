"""Practice: Leitner scheduling order, private posts, cards moved by the answer."""

from __future__ import annotations

import io
import random
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta

from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.commands import CommandSet, Invocation, run_command
from bot.domain import AnswerStatus, ChannelRef, Locale, PostKind, PostState
from bot.practice import INTERVALS, Pick, PracticeCard, choose, review
from bot.quiz import QuizService
from storage.store import SqlStore
from tests.boards.conftest import BOARDS
from tests.conftest import user
from tests.fakes import RecordingChat
from tests.quiz import quiz_of

NOW = datetime(2027, 1, 4, 9, 0, tzinfo=UTC)
ALICE, BOB = user("alice"), user("bob")


def card(qid: str, box: int, due_in_hours: float, answered_hours_ago: float = 48) -> PracticeCard:
    return PracticeCard(
        qid,
        box,
        NOW + timedelta(hours=due_in_hours),
        NOW - timedelta(hours=answered_hours_ago),
    )


def ids(bank: QuestionBank, n: int) -> list[str]:
    return sorted(q.id for q in bank)[:n]


def test_wrong_answers_go_to_box_1_due_now_and_right_ones_move_up_to_later() -> None:
    assert review(None, False, NOW) == (1, NOW)
    assert review(None, True, NOW) == (2, NOW + timedelta(days=1))
    assert review(2, True, NOW) == (3, NOW + timedelta(days=3))
    assert review(4, True, NOW) == (5, NOW + timedelta(days=14))
    assert review(5, True, NOW) == (5, NOW + timedelta(days=14))  # the top box stays
    assert review(5, False, NOW) == (1, NOW)
    assert [INTERVALS[b].days for b in sorted(INTERVALS)] == [0, 1, 3, 7, 14]


def test_due_cards_come_first_lowest_box_then_longest_overdue(bank: QuestionBank) -> None:
    a, b, c, d = ids(bank, 4)
    cards = [card(a, 3, -1), card(b, 1, -2), card(c, 1, -5), card(d, 2, +5, answered_hours_ago=1)]
    order = []
    for _ in range(3):
        choice = choose(bank, cards, NOW, random.Random(1))
        assert choice is not None and choice.pick is Pick.DUE
        order.append(choice.question.id)
        cards = [x for x in cards if x.question_id != choice.question.id]
    assert order == [c, b, a]  # box 1 (most overdue first), then box 3; d is not due


def test_unseen_questions_follow_when_nothing_is_due_easiest_first(bank: QuestionBank) -> None:
    seen = [card(q.id, 2, +24) for q in bank][:-3]
    choice = choose(bank, seen, NOW, random.Random(1))
    assert choice is not None and choice.pick is Pick.NEW
    unseen = [q for q in bank if q.id not in {c.question_id for c in seen}]
    assert choice.question in unseen
    assert choice.question.difficulty == min(q.difficulty for q in unseen)


def test_the_question_just_answered_waits_while_another_can_be_asked(bank: QuestionBank) -> None:
    a, b = ids(bank, 2)
    just_missed = card(a, 1, 0, answered_hours_ago=0)
    other = card(b, 3, -1)
    choice = choose(bank, [just_missed, other], NOW, random.Random(1))
    assert choice is not None and choice.question.id == b
    everything_seen = [card(q.id, 4, +100) for q in bank if q.id != a] + [just_missed]
    # Nothing else due and nothing unseen: the missed one comes back rather than waiting.
    choice = choose(bank, everything_seen, NOW, random.Random(1))
    assert choice is not None and (choice.question.id, choice.pick) == (a, Pick.DUE)


def test_all_seen_and_nothing_due_reviews_the_card_due_soonest(bank: QuestionBank) -> None:
    ordered = sorted(bank, key=lambda q: q.id)
    cards = [card(q.id, 4, 100 + i, answered_hours_ago=500 - i) for i, q in enumerate(ordered)]
    choice = choose(bank, cards, NOW, random.Random(1))
    assert choice is not None and choice.pick is Pick.AHEAD
    assert choice.question.id == cards[0].question_id


def test_topic_limits_the_candidates_and_an_unknown_topic_has_none(bank: QuestionBank) -> None:
    topic = bank.topics()[0]
    for seed in range(5):
        choice = choose(bank, [], NOW, random.Random(seed), topic)
        assert choice is not None and choice.question.topic == topic
    assert choose(bank, [], NOW, random.Random(1), "no-such-topic") is None


async def test_practice_is_a_private_post_and_the_answer_moves_the_card_and_closes_it(
    service: QuizService,
    channel: ChannelRef,
    chat: RecordingChat,
    commands: CommandSet,
    clock: FakeClock,
) -> None:
    inv = Invocation(channel, ALICE, Locale.EN)
    (reply,) = await run_command(commands, service, inv, "practice")
    assert reply.private and chat.sent == []  # nothing in the channel
    buttons = reply.message.buttons
    post = await service.store.posts.get(buttons[0].post_id)
    assert post is not None and post.kind is PostKind.PRACTICE and post.practice_user == ALICE
    assert post.state is PostState.OPEN and post.message is None
    assert "New question" in reply.message.footer
    question = service.bank.get(post.question_id)
    assert question is not None

    wrong = (question.answer + 1) % question.choice_count
    assert (await service.record_answer(post.id, BOB, wrong)).outcome.status is (
        AnswerStatus.UNKNOWN_POST  # someone else's practice question
    )
    answer = await service.record_answer(post.id, ALICE, wrong)
    assert answer.outcome.status is AnswerStatus.RECORDED
    assert question.text(Locale.EN).explanation in answer.message.body
    assert "comes back soon" in answer.message.footer and "never scored" in answer.message.footer
    again = await service.record_answer(post.id, ALICE, question.answer)
    assert "already answered this practice question" in again.message.body

    closed = await service.store.posts.get(post.id)
    assert closed is not None and closed.state is PostState.CLOSED
    cards = await service.store.practice.cards(ALICE)  # type: ignore[attr-defined]
    assert [(c.question_id, c.box, c.due_at) for c in cards] == [(question.id, 1, clock.now())]
    assert await service.store.scores.player_stats(channel, ALICE) is None  # never scored

    # The missed question is due again, but not twice in a row: another comes first.
    (second,) = await run_command(commands, service, inv, "practice")
    nxt = await service.store.posts.get(second.message.buttons[0].post_id)
    assert nxt is not None and nxt.question_id != question.id
    q2 = service.bank.get(nxt.question_id)
    assert q2 is not None
    clock.advance(timedelta(minutes=1))
    right = await service.record_answer(nxt.id, ALICE, q2.answer)
    assert "comes back in a day or more" in right.message.footer
    (third,) = await run_command(commands, service, inv, "practice")
    assert third.message.buttons[0].post_id != nxt.id
    back = await service.store.posts.get(third.message.buttons[0].post_id)
    assert back is not None and back.question_id == question.id
    assert "Review · box 1 of 5" in third.message.footer


async def test_a_new_practice_question_closes_the_unanswered_one(
    service: QuizService, channel: ChannelRef, commands: CommandSet
) -> None:
    inv = Invocation(channel, ALICE, Locale.EN)
    (first,) = await run_command(commands, service, inv, "practice")
    await run_command(commands, service, inv, "practice")
    old = await service.store.posts.get(first.message.buttons[0].post_id)
    assert old is not None and old.state is PostState.CLOSED
    assert await service.store.posts.open_in_channel(channel) == []  # never a channel post


async def test_practice_topic_and_unknown_topic(
    service: QuizService, channel: ChannelRef, commands: CommandSet
) -> None:
    inv = Invocation(channel, ALICE, Locale.EN)
    topic = service.bank.topics()[-1]
    (reply,) = await run_command(commands, service, inv, f"practice {topic}")
    assert f"Practice · {topic}" in reply.message.title
    (bad,) = await run_command(commands, service, inv, "practice nope")
    assert "Unknown topic 'nope'" in bad.message.body and "/quiz practice" in bad.message.body


async def test_console_answers_the_practice_question_after_practice(
    store: SqlStore, bank: QuestionBank, clock: FakeClock
) -> None:
    async with AsyncExitStack() as stack:
        await _console_practice(stack, store, bank, clock)


async def _console_practice(
    stack: AsyncExitStack, store: SqlStore, bank: QuestionBank, clock: FakeClock
) -> None:
    from adapters.console.chat import ConsoleChat
    from adapters.console.play import ConsoleSession
    from bot.domain import Platform

    out = io.StringIO()
    chat = ConsoleChat(out)
    quiz = await stack.enter_async_context(
        quiz_of(store, {Platform.CONSOLE: chat}, bank, clock, features=BOARDS, seed=4)
    )
    service = quiz.service
    session = ConsoleSession(quiz, chat, out)
    await session.handle("/ask")
    channel_post = await service.open_post(session.channel)
    assert channel_post is not None
    await session.handle("/practice")
    await session.handle("9")  # not a choice: the practice question still waits
    await session.handle("1")  # answers the practice question, not the channel one
    cards = await service.store.practice.cards(session.user)  # type: ignore[attr-defined]
    assert len(cards) == 1
    fresh = await service.store.posts.get(channel_post.id)
    assert fresh is not None and fresh.answer_count == 0
    await session.handle("2")  # now the channel question
    fresh = await service.store.posts.get(channel_post.id)
    assert fresh is not None and fresh.answer_count == 1
    text = out.getvalue()
    assert "Practice · " in text and "never scored" in text
    await service.drain_updates()
