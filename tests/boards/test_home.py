"""A member's card (`bot.home`): its figures are the boards' and the stats' (SQLite and
PostgreSQL), `/quiz me` shows it privately, "Practice now" opens a practice question, and
home pages are refreshed after answers at most once per interval."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event

from bot import app, basics, home, practice, scheduling
from bot.admin import EVERYONE, NOBODY
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.commands import Invocation, run_command
from bot.domain import (
    BoardScope,
    BoardWindow,
    ChannelRef,
    DemoPolicy,
    Locale,
    Platform,
    UserRef,
)
from bot.features import FeatureFactory, Quiz
from bot.home import PRACTICE_NOW, Ask, Homes, card_message
from bot.interactions import Click
from bot.quiz import QuizService
from bot.team import Workspace
from tests.boards.conftest import play
from tests.conftest import user
from tests.fakes import RecordingChat
from tests.quiz import quiz_of, service_of
from tests.scheduling.conftest import schedule_at

ALICE, BOB, CAROL = user("alice"), user("bob"), user("carol")
C1 = ChannelRef(Platform.SLACK, "T1", "C1")
C2 = ChannelRef(Platform.SLACK, "T1", "C2")
OTHER = ChannelRef(Platform.SLACK, "T2", "C9")
FEATURES = [basics.feature, practice.feature, home.feature, scheduling.feature]


@pytest.fixture
def features() -> list[FeatureFactory]:
    """`basic` here: the App Home with the features its card links to."""
    return FEATURES


async def test_the_card_shows_the_boards_and_the_stats_figures(
    basic: Quiz, service: QuizService
) -> None:
    strong, weak = service.bank.topics()[:2]
    await play(service, C1, {ALICE: True, BOB: True}, topic=strong)
    await play(service, C1, {ALICE: True, BOB: False}, topic=weak)
    await play(service, C2, {ALICE: False}, topic=weak)
    await play(service, C2, {ALICE: True}, topic=strong)
    await play(service, OTHER, {UserRef(Platform.SLACK, "T2", "UX"): True})

    card = await service_of(basic, Homes).card(ALICE, Locale.EN)
    board = await service.leaderboard(C1, ALICE, BoardWindow.ALL, BoardScope.WORKSPACE)
    assert board.caller is not None
    assert (card.rank, card.points, card.players) == (board.caller.rank, board.caller.points, 2)
    assert (card.answered, card.correct) == (board.caller.answered, board.caller.correct) == (4, 3)
    s1 = await service.store.scores.player_stats(C1, ALICE)
    s2 = await service.store.scores.player_stats(C2, ALICE)
    assert s1 is not None and s2 is not None
    assert card.current_streak == max(s1.current_streak, s2.current_streak)
    assert card.best_streak == max(s1.best_streak, s2.best_streak) == 2
    topics = {t.topic: (t.answered, t.correct) for t in card.topics}
    assert topics == {strong: (2, 2), weak: (2, 1)}
    assert card.topics[0].topic == strong  # strongest first
    assert card.channel == C1  # where Alice answered most (a tie: the first by id)
    assert card.admin is None and card.next_question is None

    body = card_message(card).body
    assert f"Rank 1 of 2 in this workspace · {card.points} points" in body
    assert "Answered 4, correct 3 (75%)" in body
    assert f"- {weak}: 1/2 (50%)" in body and "Language: English" in body

    nobody = await service_of(basic, Homes).card(CAROL, Locale.EN)
    assert nobody.rank is None and nobody.points == 0
    assert "No scored answers yet" in card_message(nobody).body


async def test_cards_read_together_are_each_members_own_in_as_many_statements(
    store: Any, chat: RecordingChat, bank: QuestionBank, clock: FakeClock
) -> None:
    chats = {Platform.SLACK: chat, Platform.CONSOLE: chat}
    async with quiz_of(store, chats, bank, clock, features=app.FEATURES) as quiz:
        service = quiz.service
        await play(service, C1, {ALICE: True, BOB: False, CAROL: True})
        await play(service, C2, {ALICE: False, BOB: True})
        await store.leagues.create(Workspace.of(C1), "Owls", clock.now())
        await store.leagues.join(BOB, "Owls", clock.now())
        homes = service_of(quiz, Homes)
        dan = user("dan")
        alone = [await homes.card(u) for u in (ALICE, BOB, CAROL, dan)]
        assert "Your team: Owls" in card_message(alone[1]).body
        statements: list[str] = []

        def count(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
            statements.append(sql)

        event.listen(store.engine.sync_engine, "before_cursor_execute", count)
        try:
            assert await homes.cards([Ask(ALICE)]) == alone[:1]
            one = len(statements)
            statements.clear()
            assert await homes.cards([Ask(u) for u in (ALICE, BOB, CAROL, dan)]) == alone
        finally:
            event.remove(store.engine.sync_engine, "before_cursor_execute", count)
        assert len(statements) == one  # each part read once for them all
        together = await asyncio.gather(*(homes.home_card(u) for u in (ALICE, BOB, CAROL, dan)))
        assert list(together) == alone


async def test_a_burst_of_home_opens_is_read_in_one_batch(
    store: Any, chat: RecordingChat, bank: QuestionBank, clock: FakeClock
) -> None:
    """The first open of a burst waits for the others (until a batch is full) instead of
    being read alone, though they arrive over several turns of the event loop."""
    chats = {Platform.SLACK: chat, Platform.CONSOLE: chat}
    async with quiz_of(store, chats, bank, clock, features=app.FEATURES) as quiz:
        await play(quiz.service, C1, {ALICE: True, BOB: False, CAROL: True})
        homes = service_of(quiz, Homes)
        statements: list[str] = []

        def count(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
            statements.append(sql)

        event.listen(store.engine.sync_engine, "before_cursor_execute", count)
        try:
            expected = await homes.cards([Ask(u) for u in (ALICE, BOB, CAROL)])
            one_batch = len(statements)
            statements.clear()
            homes.batch, homes.gather = 3, 60.0  # a full batch ends the wait, not the clock
            first = asyncio.ensure_future(homes.home_card(ALICE))
            for _ in range(5):
                await asyncio.sleep(0)  # its reader has started, and waits
            rest = [asyncio.ensure_future(homes.home_card(u)) for u in (BOB, CAROL)]
            cards = await asyncio.wait_for(asyncio.gather(first, *rest), 10)
        finally:
            event.remove(store.engine.sync_engine, "before_cursor_execute", count)
        assert list(cards) == expected
        # Read as one batch (its shared parts kept: one fewer), not ALICE's alone first.
        assert len(statements) <= one_batch


async def test_practice_due_next_question_and_the_admin_section(
    basic: Quiz, service: QuizService, clock: FakeClock
) -> None:
    await play(service, C1, {ALICE: True})
    schedule = await schedule_at(
        service.store,
        C1,
        "09:30",
        DemoPolicy.AUTO,
        clock.now(),
        timezone="Europe/Athens",
        weekdays="mon-fri",
    )
    message = await basic.interactions.click(Click(PRACTICE_NOW, 0, "C1", ALICE, C1))
    answer = next(b for b in message.buttons if b.action == "answer")
    q = service.bank.get((await service.store.posts.get(answer.post_id)).question_id)  # type: ignore[union-attr]
    assert q is not None
    await service.record_answer(answer.post_id, ALICE, (q.answer + 1) % q.choice_count)

    homes = service_of(basic, Homes)
    card = await homes.card(ALICE, Locale.EN, EVERYONE)
    assert (card.due, card.cards) == (1, 1)
    assert card.next_question is not None and card.next_question.channel == C1
    assert card.next_question.at > clock.now()
    assert card.admin is not None and card.admin[0].schedules == (schedule,)
    body = card_message(card).body
    assert "Practice: 1 question due" in body and "Next scheduled question:" in body
    assert "*Settings (admins)*" in body and f"#{schedule.id}" in body
    assert [b.action for b in card_message(card).buttons] == [PRACTICE_NOW]
    assert (await homes.card(ALICE, Locale.EN, NOBODY)).admin is None


async def test_quiz_me_is_private_and_in_greek(basic: Quiz, service: QuizService) -> None:
    await play(service, C1, {ALICE: True})
    (reply,) = await run_command(basic.commands, service, Invocation(C1, ALICE, Locale.EN), "me")
    assert reply.private and reply.message.title == "Your quiz card"
    assert "Rank 1 of 1 in this workspace" in reply.message.body
    (greek,) = await run_command(basic.commands, service, Invocation(C1, ALICE, Locale.EL), "me")
    assert greek.private and greek.message.title != "Your quiz card"
    assert "Your quiz card" not in greek.message.body


async def test_practice_now_refuses_a_channel_of_another_workspace(
    basic: Quiz, service: QuizService
) -> None:
    await play(service, C1, {ALICE: True})
    await play(service, OTHER, {UserRef(Platform.SLACK, "T2", "UX"): True})
    message = await basic.interactions.click(Click(PRACTICE_NOW, 0, "C9", ALICE, C1))
    assert message.body == "That channel is not one of this workspace's quiz channels."
    assert await service.store.practice.cards(ALICE) == []


async def test_answers_refresh_a_home_page_at_most_once_per_interval(
    basic: Quiz, service: QuizService, clock: FakeClock
) -> None:
    homes = service_of(basic, Homes)
    published: list[UserRef] = []

    async def publish(member: UserRef) -> None:
        published.append(member)

    homes.watch(str(Platform.SLACK), publish)
    await play(service, C1, {ALICE: True, BOB: True, CAROL: True})
    await homes.idle()
    assert published == []  # nobody has opened a home page: nothing to refresh
    homes.opened(ALICE)
    homes.opened(BOB)
    clock.advance(homes.interval + timedelta(seconds=1))
    await play(service, C1, {ALICE: True, BOB: True, CAROL: True})
    await play(service, C1, {ALICE: True})  # within the interval: no second refresh
    await homes.idle()
    assert published == [ALICE, BOB]  # Carol never opened hers
    clock.advance(homes.interval + timedelta(seconds=1))
    await play(service, C1, {ALICE: False})
    await homes.idle()
    assert published == [ALICE, BOB, ALICE]
    homes.unwatch(str(Platform.SLACK))
    clock.advance(homes.interval * 2)
    await play(service, C1, {ALICE: False})
    await homes.idle()
    assert len(published) == 3


async def test_a_home_card_is_kept_until_an_answer_or_a_reveal(
    basic: Quiz, service: QuizService, clock: FakeClock
) -> None:
    homes = service_of(basic, Homes)
    first = await homes.home_card(ALICE)
    assert await homes.home_card(ALICE) is first  # kept
    post = await play(service, C1, {BOB: True}, close=False)
    assert await homes.home_card(ALICE) is first  # Bob's answer is not Alice's
    assert await service.close(post.id) is not None  # a reveal in her workspace
    after_reveal = await homes.home_card(ALICE)
    assert after_reveal is not first and after_reveal.players == 1
    await play(service, C1, {ALICE: True}, close=False)
    assert await homes.home_card(ALICE) is not after_reveal  # her own answer
    kept = await homes.home_card(ALICE)
    clock.advance(homes.card_ttl)
    assert await homes.home_card(ALICE) is not kept  # and at most `card_ttl`
