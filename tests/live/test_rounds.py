"""A live round from the lobby to the podium, on SQLite and PostgreSQL, driven by the fake
clock and the scheduler's pass: questions on time, speed points, results, the podium, the
live board apart from the daily boards, and every bad input refused privately with
nothing stored."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import BoardWindow, ChannelRef, Locale, Platform, PostKind, PostState
from bot.features import Feature, Parts
from bot.live import LiveRounds, live_feature
from bot.live.messages import CANCEL, JOIN, START
from bot.live.ports import RoundState, live_points
from storage.store import SqlStore
from tests.live.harness import ADMIN, CHANNEL, Live, live_quiz, player, post_of

ANN, BOB, CY = player("ann"), player("bob"), player("cy")


@pytest.fixture
async def live(store: SqlStore, bank: QuestionBank, clock: FakeClock) -> AsyncIterator[Live]:
    """The quiz with live rounds (`live_quiz`) on this test's database, bank and clock."""
    async with live_quiz(store, bank, clock) as running:
        yield running


async def right(live: Live, post_id: int) -> int:
    post = await live.store.posts.get(post_id)
    assert post is not None
    question = await live.store.questions.get(post.question_hash)
    assert question is not None
    return question.answer


async def first_question(live: Live, command: str) -> int:
    """Start a round with `command` and wait out its 30 s lobby: question 1's post id."""
    await live.command(command)
    await live.at(timedelta(seconds=30))
    return post_of(live.questions()[0])


def test_points_fall_linearly_from_1000_to_500_and_a_wrong_answer_scores_0() -> None:
    from datetime import UTC, datetime

    t0 = datetime(2027, 1, 1, tzinfo=UTC)
    end = t0 + timedelta(seconds=20)
    assert live_points(True, t0, t0, end) == 1000
    assert live_points(True, t0 + timedelta(seconds=10), t0, end) == 750
    assert live_points(True, end, t0, end) == 500
    assert live_points(True, end + timedelta(seconds=5), t0, end) == 500
    assert live_points(False, t0, t0, end) == 0


async def test_a_full_round_lobby_questions_results_podium_and_live_board(
    live: Live, store: SqlStore, clock: FakeClock
) -> None:
    assert await live.command("live 2 20") == []
    (lobby,) = live.posts("Live round")
    assert lobby.message is not None and lobby.message.countdown == clock.now() + timedelta(
        seconds=30
    )
    join = next(b for b in lobby.message.buttons if b.action == JOIN)
    assert "You're in" in (await live.click(join, ANN)).body
    assert "already" in (await live.click(join, ANN)).body
    await live.click(join, CY)  # joins and never answers: last, with 0
    await live.at(timedelta(seconds=29))
    assert live.questions() == []
    await live.at(timedelta(seconds=1))
    (q1,) = live.questions()
    assert q1.message is not None and q1.message.countdown == clock.now() + timedelta(seconds=20)
    p1 = post_of(q1)
    good = await right(live, p1)
    assert "Locked in" in (await live.answer(p1, good, ANN)).body  # at 0 s: 1,000
    await live.at(timedelta(seconds=10))
    await live.answer(p1, good, BOB)  # at 10 s: 750
    await live.at(timedelta(seconds=9))
    assert len(live.questions()) == 1  # not before its time
    await live.at(timedelta(seconds=1))
    # Closed on time: its face without buttons, its results in its thread, the next.
    (results,) = live.threads("Results · question 1")
    assert results.parent == q1.ref and results.message is not None
    assert "2 of 2 right" in results.message.body
    assert "1. ann — 1,000 points" in results.message.body
    assert "2. bob — 750 points" in results.message.body
    face = [s for s in live.chat.of("update") if s.ref == q1.ref]
    assert face and face[-1].message is not None and not face[-1].message.buttons
    _, q2 = live.questions()
    p2 = post_of(q2)
    good2 = await right(live, p2)
    await live.answer(p2, (good2 + 1) % 4, ANN)
    await live.at(timedelta(seconds=5))
    await live.answer(p2, good2, BOB)  # at 5 s: 875
    await live.at(timedelta(seconds=15))
    (podium,) = live.posts("Live round: the podium")
    assert podium.message is not None
    body = podium.message.body
    assert "🥇 bob — 1,625 points" in body and "🥈 ann — 1,000 points" in body
    assert "Fastest right answer: ann, 0 s (question 1)" in body
    assert "Most right answers: bob, 2" in body
    (table,) = live.threads("Standings")
    assert table.parent == podium.ref and table.message is not None
    assert table.message.body.splitlines()[-1].startswith("3. cy — 0 points")
    assert await live.active() is None
    board = await store.live.board(CHANNEL)
    assert [(r.user.user, r.points, r.rounds) for r in board] == [
        ("UBOB", 1625, 1),
        ("UANN", 1000, 1),
    ]
    # The daily boards did not move (no `count`).
    daily = await live.quiz.service.leaderboard(CHANNEL, None, BoardWindow.DAY)
    assert daily.rows == ()
    # Every question posted once; one more pass does nothing.
    await live.at(timedelta(minutes=5))
    assert len(live.questions()) == 2 and len(live.posts("Live round: the podium")) == 1
    replies = await live.command("live board")
    assert "bob — 1,625 points (2 right, 1 rounds)" in replies[0].message.body
    (stats,) = await live.command("stats", BOB)  # the daily results, the live ones apart
    assert "You have no answers in this channel yet." in stats.message.body
    assert "Live rounds" in stats.message.body and "1,625 points" in stats.message.body


async def test_clicks_after_the_deadline_are_refused_with_the_time_they_missed_by(
    live: Live, store: SqlStore, clock: FakeClock
) -> None:
    p1 = await first_question(live, "live 1 10")
    clock.advance(timedelta(seconds=11, milliseconds=500))  # past the deadline, no pass yet
    late = await live.answer(p1, 0, ANN)
    assert "closed at" in late.body and "1.5 s late" in late.body
    await live.tick()
    after = await live.answer(p1, 0, BOB)  # after the close too
    assert "not counted" in after.body
    post = await store.posts.get(p1)
    assert post is not None and post.answer_count == 0 and post.state is PostState.CLOSED


async def test_bad_input_gets_one_private_line_and_stores_nothing(
    live: Live, bank: QuestionBank
) -> None:
    topic = bank.topics()[0]
    have = sum(q.topic == topic for q in bank)
    cases = {
        "live 0": "1 to 30 questions, not 0",
        "live 31": "1 to 30 questions, not 31",
        "live 5 4": "5 to 120 seconds, not 4",
        "live 5 121": "5 to 120 seconds, not 121",
        f"live 30 20 {topic}": f"has only {have} questions",
        "live 3 20 nosuchtopic": "Unknown topic 'nosuchtopic'",
        "live 3 20 gpu cuda": "one topic",
    }
    for text, words in cases.items():
        (reply,) = await live.command(text)
        assert reply.private and words in reply.message.body, (text, reply.message.body)
    (refused,) = await live.command("live 3 20", ANN, admin=False)
    assert refused.private and "admin" in refused.message.body
    (refused,) = await live.command("live stop", ANN, admin=False)
    assert "admin" in refused.message.body
    assert live.chat.sent == [] and await live.active() is None
    await live.command("live 2 10")
    (again,) = await live.command("live 3 20")
    assert "already under way" in again.message.body
    start = live.lobby_button(START)
    refused_click = await live.click(start, ANN)
    assert "admin" in refused_click.body and live.questions() == []


async def test_start_now_cancel_and_stop_end_the_round_with_the_standings(
    live: Live, clock: FakeClock
) -> None:
    await live.command("live 3 20")
    cancel = live.lobby_button(CANCEL)
    assert "cancelled" in (await live.click(cancel, ADMIN, admin=True)).body
    assert await live.active() is None
    await live.at(timedelta(minutes=1))
    assert live.questions() == []
    # Another: started at once by the admin, then stopped during question 1.
    await live.command("live 3 20")
    lobby2 = live.posts("Live round")[-1]
    assert lobby2.message is not None
    start = next(b for b in lobby2.message.buttons if b.action == START)
    assert "Starting now" in (await live.click(start, ADMIN, admin=True)).body
    (q1,) = live.questions()
    p1 = post_of(q1)
    await live.answer(p1, await right(live, p1), ANN)
    (status,) = await live.command("live", ANN)
    assert "Question 1 of 3" in status.message.body and "ann" in status.message.body
    clock.advance(timedelta(seconds=4))
    (stopped,) = await live.command("live stop")
    assert "ending" in stopped.message.body
    assert len(live.threads("Results · question 1")) == 1
    (podium,) = live.posts("Live round: the podium")
    assert podium.message is not None and "stopped early" in podium.message.body
    assert "ann — 1,000 points" in podium.message.body
    assert len(live.questions()) == 1 and await live.active() is None
    (none,) = await live.command("live stop")
    assert "No live round" in none.message.body


async def test_a_counted_round_also_scores_on_the_daily_board(live: Live, store: SqlStore) -> None:
    p1 = await first_question(live, "live 1 10 count")
    post = await store.posts.get(p1)
    assert post is not None and post.kind is PostKind.LIVE_COUNTED
    await live.answer(p1, await right(live, p1), ANN)
    await live.at(timedelta(seconds=10))
    daily = await live.quiz.service.leaderboard(CHANNEL, None, BoardWindow.DAY)
    assert [(r.user.user, r.points) for r in daily.rows] == [("UANN", 10)]
    assert [r.points for r in await store.live.board(CHANNEL)] == [1000]


async def test_a_scheduled_question_due_during_a_round_waits_until_it_ends(
    live: Live, store: SqlStore, clock: FakeClock
) -> None:
    at = clock.now() + timedelta(minutes=1)
    (made,) = await live.command(f"schedule set {at:%H:%M} UTC")
    await live.command("live 2 60")
    await live.at(timedelta(seconds=30))  # question 1 of the round
    await live.at(timedelta(seconds=40))  # the slot is due: it waits
    scheduled = [p for p in await store.posts.history(CHANNEL) if p.kind is PostKind.SCHEDULED]
    assert scheduled == []
    round_ = await live.active()
    assert round_ is not None and round_.state is RoundState.RUNNING
    await live.at(timedelta(seconds=20))  # question 2
    await live.at(timedelta(seconds=60))  # the round ends: then the daily question
    assert await live.active() is None
    scheduled = [p for p in await store.posts.history(CHANNEL) if p.kind is PostKind.SCHEDULED]
    assert len(scheduled) == 1
    assert made.message is not None


async def test_forget_me_takes_a_player_off_the_live_board_and_the_standings(
    live: Live, store: SqlStore
) -> None:
    await live.command("live 1 10")
    join = live.lobby_button(JOIN)
    await live.click(join, ANN)
    round_ = await live.active()
    assert round_ is not None
    await live.at(timedelta(seconds=30))
    p1 = post_of(live.questions()[0])
    await live.answer(p1, await right(live, p1), ANN)
    await live.answer(p1, await right(live, p1), BOB)
    await live.at(timedelta(seconds=10))
    assert len(await store.live.board(CHANNEL)) == 2
    await store.members.forget(ANN)
    assert [r.user.user for r in await store.live.board(CHANNEL)] == ["UBOB"]
    assert await store.live.players(round_.id) == []
    assert [a.user.user for a in await store.live.answers(round_.id)] == ["UBOB"]


async def test_a_round_in_greek(live: Live) -> None:
    await live.command("lang el")
    await live.command("live 1 10")
    (lobby,) = live.posts("Ζωντανός γύρος")
    assert lobby.message is not None and "Συμμετοχή" in [b.label for b in lobby.message.buttons]
    await live.at(timedelta(seconds=30))
    (question,) = live.posts("Ζωντανά · ερώτηση 1 από 1")
    p1 = post_of(question)
    assert "Καταχωρίστηκε" in (await live.answer(p1, 0, ANN)).body
    await live.at(timedelta(seconds=10))
    assert live.threads("Αποτελέσματα · ερώτηση 1")
    assert live.posts("Ζωντανός γύρος: το βάθρο")


async def test_the_answered_count_is_edited_at_most_once_per_5_seconds(
    store: SqlStore, bank: QuestionBank, clock: FakeClock
) -> None:
    def counting(parts: Parts) -> Feature:
        every = timedelta(seconds=5)
        return live_feature(
            LiveRounds(parts.service, parts.store.live, parts.clock, count_every=every)
        )

    async with live_quiz(store, bank, clock, live_factory=counting) as live:
        await live.command("live 1 20")
        await live.at(timedelta(seconds=30))
        (q1,) = live.questions()
        p1 = post_of(q1)
        for user, wait in ((ANN, 2), (BOB, 4), (CY, 0)):  # at 0 s, 2 s and 6 s
            await live.answer(p1, 0, user)
            await live.rounds.tasks.drain()
            clock.advance(timedelta(seconds=wait))
        edits = [s.message for s in live.chat.of("update") if s.ref == q1.ref and s.message]
        assert [e.footer.split(" · ")[0] for e in edits] == ["1 answered", "3 answered"]
        assert all(e.buttons for e in edits)
        await live.at(timedelta(seconds=20))
        edits = [s.message for s in live.chat.of("update") if s.ref == q1.ref and s.message]
        assert len(edits) == 3 and not edits[-1].buttons  # the closed face, last


async def test_rounds_in_two_channels_run_side_by_side(live: Live, store: SqlStore) -> None:
    other = ChannelRef(Platform.SLACK, "T1", "C2")
    await live.command("live 1 10")
    await live.rounds.start(
        other, ADMIN, questions=1, seconds=10, topic=None, counted=False, locale=Locale.EN
    )
    await live.at(timedelta(seconds=30))
    assert {s.channel for s in live.questions()} == {CHANNEL, other}
    await live.at(timedelta(seconds=10))
    podiums = live.posts("Live round: the podium")
    assert {s.channel for s in podiums} == {CHANNEL, other} and len(podiums) == 2
    assert await store.live.busy({CHANNEL, other}) == set()
