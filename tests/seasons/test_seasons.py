"""Seasons: starting one (and the refusals that store nothing), its boards over the
season's posts only, the end on time with one podium, the archive."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select

from bot.clock import FakeClock
from bot.domain import ChannelRef, Platform, PostKind
from bot.features import Quiz
from bot.scheduling import Scheduler
from bot.seasons import SeasonKeeper
from storage.models import SeasonRow
from storage.store import SqlStore
from tests.boards.conftest import play
from tests.conftest import user
from tests.fakes import RecordingChat
from tests.seasons.conftest import T0, say, text_of

C1 = ChannelRef(Platform.SLACK, "T1", "C1")
C2 = ChannelRef(Platform.SLACK, "T1", "C2")
ANN, BOB, CAT, DAN = user("ann"), user("bob"), user("cat"), user("dan")


async def _seasons(store: SqlStore) -> int:
    async with store.sessions() as s:
        return (await s.execute(select(func.count()).select_from(SeasonRow))).scalar_one()


def podiums(chat: RecordingChat) -> list[str]:
    return [
        text_of(m.message)
        for m in chat.sent
        if m.kind == "post" and m.message is not None and "is over" in (m.message.title or "")
    ]


async def test_a_season_counts_only_its_own_posts_and_ends_with_one_podium(
    league: Quiz, store: SqlStore, chat: RecordingChat, clock: FakeClock, scheduler: Scheduler
) -> None:
    service = league.service
    await play(service, C1, {ANN: True, BOB: True})  # before the season: not counted
    started = await say(league, C1, ANN, "season start Spring 2", admin=True)
    assert "Season Spring runs 2027-01-04 – 2027-01-17" in started.body
    for day in range(3):
        clock.set(T0 + timedelta(days=day, hours=1))
        await play(service, C1, {BOB: True, CAT: day != 1, ANN: False})
    await play(service, C2, {DAN: True})  # another channel: not this season's
    board = text_of(await say(league, C1, CAT, "season board"))
    assert "🥇 bob — 36 pts (3/3 correct)" in board
    assert "🥈 cat — 20 pts (2/3 correct)" in board
    assert "dan" not in board and "ann — 0 pts (0/3 correct)" in board
    current = text_of(await say(league, C1, CAT, "season"))
    assert "Leader: bob (36 pts)" in current and "You: rank 2 of 3, 20 pts" in current
    assert not podiums(chat)
    clock.set(T0 + timedelta(weeks=2))
    await scheduler.tick()
    await scheduler.tick()
    (podium,) = podiums(chat)
    assert "🏆 Season Spring is over" in podium
    assert "🥇 bob — 36 pts" in podium and "🥈 cat — 20 pts" in podium
    assert "Longest streak: bob (3 in a row)" in podium
    listed = text_of(await say(league, C1, ANN, "season list"))
    assert "Spring* · 2027-01-04 – 2027-01-17 · ended" in listed
    past = text_of(await say(league, C1, ANN, "season board spring"))
    assert "🥇 bob — 36 pts" in past and "ended" in past


async def test_refusals_store_nothing(league: Quiz, store: SqlStore) -> None:
    refused = await say(league, C1, ANN, "season start Spring 4")
    assert "admin" in refused.body.lower()
    bad = [
        ("season start Spring until 2026-12-01", "before it starts"),
        ("season start Spring until 2027-02-30", "is not a date"),
        ("season start Spring 99", "1 to 52 weeks"),
        ("season start Spring from 2027-03-01 until 2027-02-01", "before it starts"),
        ("season start " + "x" * 41, "1 to 40 characters"),
        ("season start Spring 4 until 2027-03-01", "not both"),
        ("season start Spring fortnight", "do not understand"),
        ("season start Spring from 2027-01-03", "today or later"),
    ]
    for text, words in bad:
        assert words in (await say(league, C1, ANN, text, admin=True)).body, text
    assert await _seasons(store) == 0
    await say(league, C1, ANN, "season start Spring 4", admin=True)
    overlap = await say(league, C1, ANN, "season start Summer 2", admin=True)
    assert "already covers this channel" in overlap.body
    overlap = await say(league, C2, ANN, "season start Summer 2 workspace", admin=True)
    assert "already covers this channel" in overlap.body
    assert await _seasons(store) == 1
    # Another channel may run its own; a season after this one is fine too.
    await say(league, C2, ANN, "season start Winter 2", admin=True)
    later = await say(league, C1, ANN, "season start Summer from 2027-03-01 2", admin=True)
    assert "Season Summer runs 2027-03-01 – 2027-03-14" in later.body
    assert await _seasons(store) == 3


async def test_an_admin_ends_a_season_now_and_the_podium_is_posted_once(
    league: Quiz, chat: RecordingChat, clock: FakeClock, keeper: SeasonKeeper
) -> None:
    await say(league, C1, ANN, "season start Sprint 1", admin=True)
    await play(league.service, C1, {ANN: True}, kind=PostKind.ASK)
    clock.advance(timedelta(hours=1))
    assert "Season Sprint is over" in (await say(league, C1, ANN, "season end", admin=True)).body
    assert len(podiums(chat)) == 1
    assert await keeper.tick() == []
    assert len(podiums(chat)) == 1
    assert "No season is running" in (await say(league, C1, ANN, "season")).body


async def test_the_podium_names_the_most_improved_and_the_best_per_topic(
    league: Quiz, chat: RecordingChat, clock: FakeClock, keeper: SeasonKeeper
) -> None:
    """Three weeks: the first third is week one, the last third week three. Ann goes from
    1 of 3 right to 3 of 3 (3 answers in each third: the minimum); Bob improves more,
    0 of 2 to 2 of 2, on too few answers."""
    await say(league, C1, ANN, "season start Trio 3", admin=True)
    week = timedelta(weeks=1)
    for day, right in ((0, True), (1, False), (2, False), (15, True), (16, True), (17, True)):
        clock.set(T0 + timedelta(days=day, hours=1))
        results = {ANN: right, CAT: True}
        if day in (0, 1, 15, 16):
            results[BOB] = day >= 15
        await play(league.service, C1, results, topic="fragmentation")
    clock.set(T0 + 3 * week)
    assert len(await keeper.tick()) == 1
    (podium,) = podiums(chat)
    assert "Most improved: ann (33% → 100% correct)" in podium
    assert "Best in fragmentation: cat (6/6 correct)" in podium
    assert "Longest streak: cat (6 in a row)" in podium


async def test_at_the_end_instant_only_posts_closed_before_it_count(
    league: Quiz, store: SqlStore, chat: RecordingChat, clock: FakeClock, scheduler: Scheduler
) -> None:
    """The season's posts are those created at or after its start and closed strictly
    before its end: a post closed at the end instant counts for nothing, not even its
    answers given before the end."""
    await say(league, C1, ANN, "season start Edge 1", admin=True)
    season = await store.seasons.current(C1, clock.now())
    assert season is not None and season.starts_at == clock.now()
    end = season.ends_at
    ask = PostKind.ASK
    await play(league.service, C1, {ANN: True}, kind=ask)  # created at the start instant
    await play(league.service, C1, {CAT: True}, kind=ask, at=end - timedelta(minutes=10))
    late = await play(league.service, C1, {BOB: True}, kind=ask, at=end - timedelta(seconds=1))
    closed = await store.posts.get(late.id)
    assert closed is not None and closed.closed_at == end  # BOB answered a second before
    board = await store.seasons.board(season, None)
    assert [(r.user.display, r.points) for r in board.rows] == [("ann", 10), ("cat", 10)]
    assert board.players == 2
    await scheduler.tick()  # at the end instant: the season ends, its podium is posted
    (podium,) = podiums(chat)
    assert "🥇 ann — 10 pts" in podium and "🥇 cat — 10 pts" in podium  # a tie
    assert "bob" not in podium
