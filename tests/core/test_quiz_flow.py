"""The quiz use cases end to end on a real database (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import timedelta

import pytest

from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import (
    AnswerStatus,
    ChannelRef,
    Locale,
    MessageRef,
    Platform,
    Post,
    PostKind,
    PostState,
    QuestionText,
)
from bot.errors import UserFacingError
from bot.features import Quiz
from bot.messages import ANSWER, Button, Message
from bot.quiz import QuizService
from storage.store import SqlStore
from tests.conftest import user
from tests.fakes import RecordingChat
from tests.polling import eventually
from tests.quiz import asked, quiz_of

ALICE, BOB, CAROL = user("alice"), user("bob"), user("carol")


@asynccontextmanager
async def posted_on_slack(
    store: SqlStore, chat: RecordingChat, bank: QuestionBank, clock: FakeClock, channel: ChannelRef
) -> AsyncIterator[tuple[Quiz, Post]]:
    """The quiz with no features on one Slack `chat`, and the question it posted in `channel`."""
    async with quiz_of(store, {Platform.SLACK: chat}, bank, clock, features=[]) as q:
        post = await asked(q.service, channel)
        assert post.message is not None
        yield q, post


async def test_ask_posts_the_question_with_one_button_per_choice(
    service: QuizService, chat: RecordingChat, channel: ChannelRef
) -> None:
    post = await service.ask(channel)
    assert post is not None and post.state is PostState.OPEN and post.message is not None
    (sent,) = chat.of("post")
    question = service.bank.get(post.question_id)
    assert question is not None
    assert question.text(Locale.EN).prompt in sent.message.body  # type: ignore[union-attr]
    buttons = sent.message.buttons  # type: ignore[union-attr]
    assert [b.label for b in buttons] == ["A", "B", "C", "D"][: question.choice_count]
    decoded = [Button.decode(b.encode()) for b in buttons]
    assert decoded == [(ANSWER, post.id, str(i)) for i in range(len(buttons))]
    assert "0 answered" in sent.message.footer  # type: ignore[union-attr]


async def test_answer_is_told_privately_with_explanation_and_first_answer_counts(
    service: QuizService, channel: ChannelRef
) -> None:
    post = await asked(service, channel)
    question = service.bank.get(post.question_id)
    assert question is not None
    wrong = (question.answer + 1) % question.choice_count

    first = await service.record_answer(post.id, ALICE, wrong)
    assert first.outcome.status is AnswerStatus.RECORDED and first.outcome.correct is False
    assert question.text(Locale.EN).explanation in first.message.body
    assert "Not quite" in first.message.body

    again = await service.record_answer(post.id, ALICE, question.answer)
    assert again.outcome.status is AnswerStatus.ALREADY_ANSWERED
    assert again.outcome.choice == wrong  # the first answer is the one that counts
    assert "already answered" in again.message.body

    right = await service.record_answer(post.id, BOB, question.answer)
    assert right.outcome.correct is True and right.outcome.answer_count == 2
    assert "Correct" in right.message.body


async def test_close_reveals_once_in_the_thread_with_distribution_and_first_correct(
    service: QuizService, chat: RecordingChat, channel: ChannelRef, clock: FakeClock
) -> None:
    post = await asked(service, channel)
    q = service.bank.get(post.question_id)
    assert q is not None
    wrong = (q.answer + 1) % q.choice_count
    await service.record_answer(post.id, ALICE, wrong)
    clock.advance(timedelta(seconds=5))
    await service.record_answer(post.id, BOB, q.answer)
    clock.advance(timedelta(seconds=5))
    await service.record_answer(post.id, CAROL, q.answer)

    reveal = await service.close(post.id)
    assert reveal is not None
    expected = [0] * q.choice_count
    expected[wrong], expected[q.answer] = 1, 2
    assert list(reveal.distribution) == expected
    assert reveal.first_correct == BOB
    assert await service.close(post.id) is None  # a second close does nothing

    (thread,) = chat.of("thread")
    assert thread.parent == post.message
    body = thread.message.body  # type: ignore[union-attr]
    assert "bob" in body and "2 (67%)" in body and q.text(Locale.EN).explanation in body
    # The public post lost its buttons; the distribution never appeared there.
    final = chat.of("update")[-1].message
    assert final is not None and final.buttons == () and "(67%)" not in final.body

    late = await service.record_answer(post.id, CAROL, wrong)
    assert late.outcome.status is AnswerStatus.CLOSED and "closed" in late.message.body


async def test_click_on_unknown_post_or_invalid_choice_gets_a_clear_line(
    service: QuizService, channel: ChannelRef
) -> None:
    unknown = await service.record_answer(999_999, ALICE, 0)
    assert unknown.outcome.status is AnswerStatus.UNKNOWN_POST
    assert "not available" in unknown.message.body
    post = await asked(service, channel)
    bad = await service.record_answer(post.id, ALICE, 9)
    assert bad.outcome.status is AnswerStatus.INVALID_CHOICE
    assert (await service.record_answer(post.id, ALICE, 0)).outcome.status is AnswerStatus.RECORDED


async def test_leaderboard_counts_closed_posts_only_and_ranks_ties_together(
    service: QuizService, channel: ChannelRef
) -> None:
    for _ in range(2):
        post = await asked(service, channel)
        q = service.bank.get(post.question_id)
        assert q is not None
        await service.record_answer(post.id, ALICE, q.answer)
        await service.record_answer(post.id, BOB, q.answer)
        await service.record_answer(post.id, CAROL, (q.answer + 1) % q.choice_count)
        board = await service.leaderboard(channel, CAROL)
        assert board.players == (0 if _ == 0 else 3)  # answers on open posts are hidden
        await service.close(post.id)
    board = await service.leaderboard(channel, CAROL)
    assert [(r.rank, r.points) for r in board.rows] == [(1, 20), (1, 20), (3, 0)]
    assert board.players == 3 and board.caller is not None and board.caller.rank == 3


async def test_channel_locale_switches_question_and_outcome_to_greek(
    service: QuizService, chat: RecordingChat, channel: ChannelRef
) -> None:
    await service.set_locale(channel, Locale.EL)
    post = await service.ask(channel)
    assert post is not None and post.locale is Locale.EL
    q = service.bank.get(post.question_id)
    assert q is not None
    assert q.text(Locale.EL).prompt in chat.of("post")[0].message.body  # type: ignore[union-attr]
    reply = await service.record_answer(post.id, ALICE, q.answer)
    assert q.text(Locale.EL).explanation in reply.message.body
    assert "Σωστό" in reply.message.body
    # A user whose platform tells us their locale gets it in English.
    other = await service.record_answer(post.id, BOB, q.answer, user_locale=Locale.EN)
    assert "Correct" in other.message.body


async def test_editing_a_question_never_rewrites_an_earlier_post(
    store: SqlStore,
    chat: RecordingChat,
    bank: QuestionBank,
    clock: FakeClock,
    channel: ChannelRef,
) -> None:
    async with quiz_of(store, {Platform.SLACK: chat}, bank, clock, features=[], seed=1) as q:
        post = await q.service.ask(channel)
    assert post is not None
    old = bank.get(post.question_id)
    assert old is not None
    texts = dict(old.texts)
    texts[Locale.EN] = QuestionText(
        texts[Locale.EN].prompt, texts[Locale.EN].choices, "An edited explanation."
    )
    edited = replace(old, texts=texts, content_hash="edited0000000000")
    others = [q for q in bank if q.id != old.id]
    edited_bank = QuestionBank([edited, *others])
    async with quiz_of(store, {Platform.SLACK: chat}, edited_bank, clock, features=[]) as q:
        reply = await q.service.record_answer(post.id, ALICE, old.answer)
    assert old.text(Locale.EN).explanation in reply.message.body
    assert "An edited explanation." not in reply.message.body


async def test_close_due_reveals_posts_whose_window_passed(
    service: QuizService, channel: ChannelRef, clock: FakeClock
) -> None:
    early = await service.ask(channel, closes_in=timedelta(hours=1))
    late = await service.ask(channel, closes_in=timedelta(hours=3))
    assert early is not None and late is not None
    assert await service.close_due() == []
    clock.advance(timedelta(hours=2))
    assert [r.post.id for r in await service.close_due()] == [early.id]
    assert await service.store.posts.get(late.id) is not None


async def test_publish_failure_leaves_a_claimed_post_that_can_be_sent_later(
    service: QuizService, chat: RecordingChat, channel: ChannelRef, clock: FakeClock
) -> None:
    chat.fail_posts = 1
    with pytest.raises(UserFacingError, match="will be posted here as soon as it does"):
        await service.ask(channel)
    (claimed,) = await service.store.posts.unsent(clock.now())
    assert claimed.state is PostState.CLAIMED and claimed.kind is PostKind.ASK
    q = await service.store.questions.get(claimed.question_hash)
    assert q is not None
    sent = await service.publish(claimed, q)
    assert sent.state is PostState.OPEN and await service.store.posts.unsent(clock.now()) == []


async def test_new_channels_start_with_the_configured_locale_and_time_zone(
    db_url: str, clock: FakeClock, bank: QuestionBank
) -> None:
    from storage.refs import ChannelDefaults
    from storage.store import SqlStore

    chat = RecordingChat()
    defaults = ChannelDefaults("el", "Europe/Athens")
    async with SqlStore(db_url, clock=clock, defaults=defaults) as store:
        fresh = ChannelRef(Platform.SLACK, "T9", "C9")
        settings = await store.settings.get(fresh)
        assert (settings.locale, settings.timezone) == (Locale.EL, "Europe/Athens")
        async with quiz_of(store, {Platform.SLACK: chat}, bank, clock, features=[]) as q:
            post = await q.service.ask(fresh)
            assert post is not None and post.locale is Locale.EL
            assert "(Europe/Athens)" in chat.of("post")[0].message.footer  # type: ignore[union-attr]


class HeldEditChat(RecordingChat):
    """A platform that holds an edit with buttons (the "N answered" count) until released."""

    def __init__(self) -> None:
        super().__init__()
        self.held = asyncio.Event()
        self.release = asyncio.Event()

    async def update_message(self, ref: MessageRef, message: Message) -> None:
        if message.buttons and not self.release.is_set():
            self.held.set()
            await self.release.wait()
        await super().update_message(ref, message)


async def test_a_count_edit_in_flight_never_brings_the_buttons_back_after_the_close(
    store: SqlStore, bank: QuestionBank, clock: FakeClock, channel: ChannelRef
) -> None:
    chat = HeldEditChat()
    async with posted_on_slack(store, chat, bank, clock, channel) as (q, post):
        question = bank.get(post.question_id)
        assert question is not None
        await q.service.record_answer(post.id, ALICE, question.answer)
        await asyncio.wait_for(chat.held.wait(), 10)  # the count edit read the post open
        closing = asyncio.create_task(q.service.close(post.id))

        async def closed() -> bool:
            now = await store.posts.get(post.id)
            return now is not None and now.state is PostState.CLOSED

        await eventually(closed)  # the close committed while the count edit was held
        chat.release.set()
        assert await asyncio.wait_for(closing, 10) is not None
        await q.service.drain_updates()
    edits = [s.message for s in chat.of("update") if s.ref == post.message]
    assert any(m is not None and m.buttons for m in edits)  # the count edit went out
    assert edits[-1] is not None and edits[-1].buttons == ()  # and the closed face is last


async def test_a_count_edit_waits_for_the_bursts_acknowledgements(
    store: SqlStore, bank: QuestionBank, clock: FakeClock, channel: ChannelRef
) -> None:
    chat = RecordingChat()
    async with posted_on_slack(store, chat, bank, clock, channel) as (q, post):
        q.service.acks.hold = 60.0
        q.service.acks.enter()  # an adapter is acknowledging a click
        await q.service.record_answer(post.id, ALICE, 0)
        with pytest.raises(TimeoutError):  # the edit is due (interval 0) but held back
            await asyncio.wait_for(asyncio.shield(q.service.drain_updates()), 0.5)
        assert [s for s in chat.of("update") if s.ref == post.message] == []
        q.service.acks.leave()  # every acknowledgement is out
        await asyncio.wait_for(q.service.drain_updates(), 10)
    (edit,) = [s.message for s in chat.of("update") if s.ref == post.message]
    assert edit is not None and edit.buttons  # "1 answered", buttons still on
