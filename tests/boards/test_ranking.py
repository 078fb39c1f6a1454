"""Ranking: shared ranks for equal points, listing order, the caller outside the top 10,
streaks, the leader in the reveal, and the board command."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import insert

from bot.commands import CommandSet, Invocation, run_command
from bot.domain import (
    BoardPeriod,
    BoardScope,
    BoardWindow,
    ChannelRef,
    Locale,
    PostKind,
)
from bot.quiz import QuizService
from storage.board_keys import ALL_TIME
from storage.models import ScoreHistogramRow, ScorePeriodRow, ScoreRow
from storage.store import SqlStore
from tests.boards.conftest import play
from tests.conftest import user
from tests.fakes import RecordingChat

ALICE, BOB, CAROL, DAN = user("alice"), user("bob"), user("carol"), user("dan")
T0 = datetime(2027, 1, 4, 9, 0, tzinfo=UTC)


async def _rows(
    store: SqlStore,
    model: type,
    histogram: tuple[str, date],
    rows: list[tuple[str, int, int, int]],
    **key: object,
) -> None:
    """A board written directly: members named in `rows` with (points, correct, minutes
    after T0 the score was reached), and the board's histogram."""
    async with store.sessions.begin() as s:
        ids = await store.refs.member_ids(s, [user(name) for name, *_ in rows])
        for points, n in Counter(points for _, points, _, _ in rows).items():
            await s.execute(
                insert(ScoreHistogramRow).values(
                    board=histogram[0], starts=histogram[1], points=points, players=n
                )
            )
        for name, points, correct, minutes in rows:
            await s.execute(
                insert(model).values(
                    member_id=ids[user(name).key],
                    points=points,
                    correct=correct,
                    answered=correct + 1,
                    reached_at=T0 + timedelta(minutes=minutes),
                    **key,
                )
            )


async def test_equal_points_share_a_rank_listed_by_correct_answers_then_earlier(
    service: QuizService, channel: ChannelRef
) -> None:
    store = service.store
    assert isinstance(store, SqlStore)
    await service.ask(channel)  # creates the channel row
    async with store.sessions() as s:
        cid = await store.refs.channel_id(s, channel, T0)
    await _rows(
        store,
        ScoreRow,
        (f"channel:{cid}:all", ALL_TIME),
        [
            ("late", 20, 2, 30),
            ("top", 30, 3, 50),
            ("early", 20, 2, 10),
            ("many", 20, 3, 40),  # same points, more correct answers: listed first
            ("last", 5, 1, 0),
        ],
        channel_id=cid,
        current_streak=0,
        best_streak=0,
    )
    board = await service.leaderboard(channel, None)
    assert [(r.rank, r.user.user) for r in board.rows] == [
        (1, "UTOP"),
        (2, "UMANY"),
        (2, "UEARLY"),
        (2, "ULATE"),
        (5, "ULAST"),
    ]
    assert board.players == 5


async def test_caller_outside_the_top_10_gets_their_own_rank_and_points(
    service: QuizService, channel: ChannelRef, commands: CommandSet
) -> None:
    store = service.store
    assert isinstance(store, SqlStore)
    board_key = f"workspace:{channel.platform}:{channel.workspace}:week"
    week = date(2027, 1, 4)
    players = [(f"p{i:02}", 100 - i, 10, i) for i in range(14)]  # p00 leads, p13 last
    await _rows(store, ScorePeriodRow, (board_key, week), players, board=board_key, starts=week)

    period = BoardPeriod(BoardWindow.WEEK, week, week + timedelta(days=6))
    board = await store.scores.leaderboard(
        channel, user("p12"), scope=BoardScope.WORKSPACE, period=period
    )
    assert [r.user.user for r in board.rows] == [f"UP{i:02}" for i in range(10)]
    assert board.players == 14
    assert board.caller is not None
    assert (board.caller.rank, board.caller.points) == (13, 88)
    top = await store.scores.leaderboard(
        channel, user("p03"), scope=BoardScope.WORKSPACE, period=period
    )
    assert top.caller is not None and top.caller.rank == 4 and top.caller in top.rows
    stranger = await store.scores.leaderboard(
        channel, user("nobody"), scope=BoardScope.WORKSPACE, period=period
    )
    assert stranger.caller is None and stranger.players == 14

    # Through the command, in the current week (the clock is in that week).
    inv = Invocation(channel, user("p12"), Locale.EN)
    (reply,) = await run_command(commands, service, inv, "leaderboard week workspace")
    assert not reply.private
    lines = reply.message.body.splitlines()
    assert lines[0].startswith("🥇 p00 — 100 pts") and lines[1].startswith("🥈 p01")
    assert lines[-2:] == ["…", "13. p12 — 88 pts (10/11 correct)"]
    assert reply.message.title == "Workspace leaderboard · this week"
    assert reply.message.footer == "14 players · 2027-01-04 – 2027-01-10"


async def test_ties_from_real_play_share_a_rank_and_skip_the_next(
    service: QuizService, channel: ChannelRef
) -> None:
    await play(
        service, channel, {ALICE: True, BOB: True, CAROL: True, DAN: False}, kind=PostKind.ASK
    )
    await play(
        service, channel, {ALICE: True, BOB: False, CAROL: False, DAN: True}, kind=PostKind.ASK
    )
    board = await service.leaderboard(channel, DAN)
    assert [(r.rank, r.user, r.points) for r in board.rows] == [
        (1, ALICE, 20),
        (2, BOB, 10),  # bob reached 10 before carol and dan: listed first
        (2, CAROL, 10),
        (2, DAN, 10),
    ]


async def test_streak_counts_consecutive_scheduled_questions_and_ask_neither_extends_nor_breaks(
    service: QuizService, channel: ChannelRef
) -> None:
    s = PostKind.SCHEDULED
    await play(service, channel, {ALICE: True, BOB: True}, kind=s)  # 10, 10
    await play(service, channel, {ALICE: True, BOB: True}, kind=s)  # 11, 11
    await play(service, channel, {ALICE: False, BOB: True}, kind=PostKind.ASK)  # 0, 11
    await play(service, channel, {ALICE: True}, kind=s)  # 12; bob missed it: streak 0
    await play(service, channel, {ALICE: True, BOB: True}, kind=s)  # 13, 10

    alice = await service.store.scores.player_stats(channel, ALICE)
    bob = await service.store.scores.player_stats(channel, BOB)
    assert alice is not None and bob is not None
    assert (alice.points, alice.current_streak, alice.best_streak) == (46, 4, 4)
    assert (bob.points, bob.current_streak, bob.best_streak) == (42, 1, 2)
    assert await service.store.scores.player_stats(channel, CAROL) is None  # never answered


async def test_practice_never_reaches_a_board_and_reveal_names_the_leader(
    service: QuizService, channel: ChannelRef, chat: RecordingChat, commands: CommandSet
) -> None:
    inv = Invocation(channel, CAROL, Locale.EN)
    for _ in range(3):
        (reply,) = await run_command(commands, service, inv, "practice")
        button = reply.message.buttons[0]
        await service.record_answer(button.post_id, CAROL, int(button.value))
    await play(service, channel, {ALICE: False, BOB: True})
    for window in BoardWindow:
        for scope in BoardScope:
            board = await service.leaderboard(channel, CAROL, window, scope)
            assert [r.user for r in board.rows] == [BOB, ALICE] and board.caller is None
    reveal = chat.of("thread")[-1].message
    assert reveal is not None and "Channel leader: bob with 10 points" in reveal.body
