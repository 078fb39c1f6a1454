"""Erasing a member (`/quiz forget-me`, `quizbot member forget`) leaves every aggregate and
board equal to a recomputation from the answers that remain — after any mix of asks,
answers, practice and closes, with posts still open closing afterwards — on SQLite and
PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import BoardPeriod, BoardScope, BoardWindow, PostKind, PostState
from storage.members import TOMBSTONE
from storage.models import AnswerRow, MemberRow, PostRow, PracticeCardRow
from storage.store import SqlStore
from tests.boards.test_aggregates import (
    CHANNELS,
    MEMBERS,
    START,
    _check_boards,
    actual,
    play_script,
    recompute,
    rounds,
)


@pytest.mark.slow
@pytest.mark.timeout(240)  # every example plays a whole script
@settings(
    max_examples=6,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=rounds, who=st.integers(0, 2))
def test_boards_equal_a_recomputation_without_the_forgotten_member(
    db_url: str, bank: QuestionBank, script: list[tuple[Any, ...]], who: int
) -> None:
    asyncio.run(_forget(db_url, bank, script, who))


async def _forget(url: str, bank: QuestionBank, script: list[tuple[Any, ...]], who: int) -> None:
    clock = FakeClock(START)
    async with SqlStore(url, clock=clock) as store:
        service = await play_script(store, bank, clock, script)
        gone = MEMBERS["T1"][who]
        async with store.sessions() as s:
            mid = (
                await s.execute(select(MemberRow.id).where(MemberRow.user_id == gone.user))
            ).scalar_one_or_none()
        done = await store.members.forget(gone)
        assert done.members == (0 if mid is None else 1)
        # Questions still open close now: their folds must not bring the member back.
        async with store.sessions() as s:
            still_open = (
                await s.execute(
                    select(PostRow.id).where(
                        PostRow.state == PostState.OPEN.value,
                        PostRow.kind != PostKind.PRACTICE.value,
                    )
                )
            ).scalars()
            closing = list(still_open)
        for post_id in closing:
            await service.close(post_id)
        expected = await recompute(store)
        assert await actual(store) == expected
        await _check_boards(service, expected)
        for ref, _ in CHANNELS:
            for window in BoardWindow:
                for scope in BoardScope:
                    board = await store.scores.leaderboard(
                        ref, gone, scope=scope, period=_period(service, window)
                    )
                    assert gone.user not in {r.user.user for r in board.rows}
                    assert board.caller is None
        # Off the seasons' boards and off their team (the team board lost their points).
        assert await store.leagues.team_of(gone) is None
        for season in await store.seasons.listed(CHANNELS[0][0]):
            board = await store.seasons.board(season, gone, min_answers=1)
            assert board.caller is None
            assert gone.user not in {r.user.user for r in board.rows + board.accurate}
        if mid is None:
            return
        async with store.sessions() as s:
            row = await s.get(MemberRow, mid)
            assert row is not None
            assert (row.user_id, row.display_name) == (TOMBSTONE.format(id=mid), "")
            for model in (AnswerRow, PracticeCardRow):
                count = select(func.count()).where(model.member_id == mid)
                assert (await s.execute(count)).scalar_one() == 0
            # Each post's count of answers agrees with its answers.
            counts = await s.execute(
                select(PostRow.answer_count, func.count(AnswerRow.id))
                .outerjoin(AnswerRow, AnswerRow.post_id == PostRow.id)
                .group_by(PostRow.id, PostRow.answer_count)
            )
            assert all(kept == real for kept, real in counts)
        assert (await store.members.export(gone))["member"] is None


def _period(service: Any, window: BoardWindow) -> BoardPeriod:
    from bot.scoring import board_period

    return board_period(window, service.clock.now(), "UTC")


async def test_a_forgotten_member_who_plays_again_is_a_new_member(
    store: SqlStore, clock: FakeClock, service: Any
) -> None:
    from tests.boards.conftest import play

    channel = CHANNELS[0][0]
    ann = MEMBERS["T1"][0]
    await play(service, channel, {ann: True, MEMBERS["T1"][1]: True})
    assert (await store.members.forget(ann)).answers == 1
    clock.advance(timedelta(seconds=1))  # a click stamped at the erasure itself is refused
    await play(service, channel, {ann: False})
    board = await store.scores.leaderboard(channel, ann)
    assert board.caller is not None and board.caller.points == 0 and board.players == 2
    data = await store.members.export(ann)
    assert data["member"]["user"] == ann.user and len(data["answers"]) == 1
    assert (await store.members.forget(ann)).answers == 1
    assert (await store.members.forget(ann)).members == 0  # nothing left to erase
