"""The aggregates equal a full recomputation from the answers, after any mix of asks,
answers (repeated ones too), practice, closes and clock moves — on SQLite and PostgreSQL.
Also: the migration that introduced `score_periods`/`score_topics` fills them the same way.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, select
from sqlalchemy.engine import Connection

from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import (
    BoardPeriod,
    BoardScope,
    BoardWindow,
    ChannelRef,
    ChannelSettings,
    Locale,
    Platform,
    PostKind,
    PostState,
    UserRef,
)
from bot.practice import Practice
from bot.quiz import QuizService
from bot.scoring import local_day, period_start, score_answer
from bot.seasons import SeasonScope
from bot.team import Workspace
from bot.teams import TeamRule, TeamScore
from storage.board_keys import ALL_TIME
from storage.engine import alembic_config, create_engine, upgrade
from storage.models import (
    AnswerRow,
    Base,
    ChannelRow,
    MemberRow,
    PostRow,
    QuestionVersionRow,
    ScoreDayRow,
    ScoreHistogramRow,
    ScorePeriodRow,
    ScoreRow,
    ScoreTopicRow,
    SeasonRow,
    SeasonScoreRow,
    SeasonTopicRow,
    TeamMemberRow,
    TeamRow,
    TeamScoreRow,
)
from storage.store import SqlStore
from tests.boards.conftest import play
from tests.databases import migrate
from tests.fakes import RecordingChat
from tests.quiz import quiz_of

CHANNELS = [
    (ChannelRef(Platform.SLACK, "T1", "C1"), "Europe/Athens"),
    (ChannelRef(Platform.SLACK, "T1", "C2"), "UTC"),
    (ChannelRef(Platform.SLACK, "T2", "C3"), "America/New_York"),
]
MEMBERS = {
    ws: [UserRef(Platform.SLACK, ws, f"U{ws}{i}", f"{ws.lower()}-{i}") for i in range(3)]
    for ws in ("T1", "T2")
}
START = datetime(2027, 3, 26, 20, 0, tzinfo=UTC)  # a Friday before the spring DST change

# A round: a question in a channel (scheduled, ask or someone's practice), clicks on it or
# on earlier questions (right, wrong, or not a choice; repeats too), then it is closed now,
# at the end (out of order) or never; then the clock moves on (across days, weeks and the
# DST change).
clicks = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 2), st.sampled_from([True, True, False, None])),
    max_size=7,
)
rounds = st.lists(
    st.tuples(
        st.integers(0, 2),
        st.sampled_from(["scheduled", "scheduled", "ask", "practice"]),
        clicks,
        st.sampled_from(["now", "now", "later", "never"]),
        st.integers(0, 60),
    ),
    min_size=1,
    max_size=9,
)


@pytest.mark.slow
@pytest.mark.timeout(240)  # every example plays a whole script
@settings(
    max_examples=8,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: each example is a database run
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=rounds)
def test_aggregates_equal_a_recomputation_from_the_answers(
    db_url: str, bank: QuestionBank, script: list[tuple[Any, ...]]
) -> None:
    asyncio.run(_run(db_url, bank, script))


async def _run(url: str, bank: QuestionBank, script: list[tuple[Any, ...]]) -> None:
    clock = FakeClock(START)
    async with SqlStore(url, clock=clock) as store:
        service = await play_script(store, bank, clock, script)
        expected = await recompute(store)
        assert await actual(store) == expected
        await _check_boards(service, expected)


async def play_script(
    store: SqlStore, bank: QuestionBank, clock: FakeClock, script: list[tuple[Any, ...]]
) -> QuizService:
    """Play a `rounds` script on an emptied database (posts closed "never" stay open)."""
    await _clear(store)
    async with quiz_of(
        store, {Platform.SLACK: RecordingChat()}, bank, clock, features=[], seed=3
    ) as quiz:
        return await _play_script(quiz.service, store, bank, clock, script)


async def _play_script(
    service: QuizService,
    store: SqlStore,
    bank: QuestionBank,
    clock: FakeClock,
    script: list[tuple[Any, ...]],
) -> QuizService:
    practice = Practice(service, store.practice)
    for ref, tz in CHANNELS:
        await store.settings.save(ChannelSettings(ref, timezone=tz))
    await _seasons_and_teams(store, clock)
    posts: list[tuple[int, ChannelRef]] = []
    later: list[int] = []
    for channel_index, kind, round_clicks, close, hours in script:
        ref = CHANNELS[channel_index][0]
        members = MEMBERS[ref.workspace]
        if kind == "practice":
            post, _ = await practice.next_question(ref, members[0], Locale.EN)
        else:
            asked = await service.ask(ref, kind=PostKind(kind))
            assert asked is not None
            post = asked
        posts.append((post.id, ref))
        for back, member, right in round_clicks:
            post_id, where = posts[max(0, len(posts) - 1 - back)]
            target = await store.posts.get(post_id)
            assert target is not None
            q = bank.get(target.question_id)
            assert q is not None
            choice = q.answer if right else (q.answer + 1) % q.choice_count
            if right is None:
                choice = q.choice_count  # an invalid click records nothing
            await service.record_answer(post_id, MEMBERS[where.workspace][member], choice)
            clock.advance(timedelta(minutes=7))
        if close == "now":
            await service.close(post.id)
            clock.advance(timedelta(seconds=1))  # folds happen in closed_at order
        elif close == "later":
            later.append(post.id)
        clock.advance(timedelta(hours=hours))
    for post_id in reversed(later):
        await service.close(post_id)
        clock.advance(timedelta(seconds=1))
    await service.drain_updates()
    return service


# Seasons: C1's own (ends within most scripts), C2's (starts after the first post), T2's
# workspace season; teams in T1: members 0 and 1, member 2 alone.
SEASONS = [
    (0, SeasonScope.CHANNEL, timedelta(0), timedelta(days=2)),
    (1, SeasonScope.CHANNEL, timedelta(hours=12), timedelta(days=5)),
    (2, SeasonScope.WORKSPACE, timedelta(0), timedelta(days=3)),
]


async def _seasons_and_teams(store: SqlStore, clock: FakeClock) -> None:
    now = clock.now()
    for i, (index, scope, start, length) in enumerate(SEASONS):
        ref = CHANNELS[index][0]
        begins = now + start
        await store.seasons.start(ref, scope, f"S{i}", begins, begins + length, "admin", now)
    ws = Workspace.of(MEMBERS["T1"][0])
    for name, members in (("Owls", MEMBERS["T1"][:2]), ("Foxes", MEMBERS["T1"][2:])):
        await store.leagues.create(ws, name, now)
        for who in members:
            await store.leagues.join(who, name, now)


async def _clear(store: SqlStore) -> None:
    async with store.sessions.begin() as s:
        for table in reversed(Base.metadata.sorted_tables):
            await s.execute(delete(table))


async def recompute(store: SqlStore) -> dict[str, dict[tuple[Any, ...], tuple[Any, ...]]]:
    """Every aggregate, from posts and answers alone, the rules applied in close order."""
    async with store.sessions() as s:
        channels = {c.id: c for c in (await s.execute(select(ChannelRow))).scalars()}
        topics = {
            h: json.loads(d)["topic"]
            for h, d in await s.execute(select(QuestionVersionRow.hash, QuestionVersionRow.data))
        }
        closed = (
            (
                await s.execute(
                    select(PostRow)
                    .where(PostRow.state == PostState.CLOSED.value, PostRow.kind != "practice")
                    .order_by(PostRow.closed_at, PostRow.id)
                )
            )
            .scalars()
            .all()
        )
        answers: dict[int, list[AnswerRow]] = defaultdict(list)
        for a in (await s.execute(select(AnswerRow))).scalars():
            answers[a.post_id].append(a)
        seasons = (await s.execute(select(SeasonRow).order_by(SeasonRow.id))).scalars().all()
        on_team = dict(
            (await s.execute(select(TeamMemberRow.member_id, TeamMemberRow.team_id))).all()
        )
    season_rows: dict[tuple[Any, ...], list[tuple[int, bool, datetime]]] = defaultdict(list)
    season_streak: dict[tuple[int, int, int], int] = defaultdict(int)
    season_best: dict[tuple[int, int, int], int] = defaultdict(int)
    season_thirds: dict[tuple[int, int, int], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    season_topics: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0, 0, 0])

    streak: dict[tuple[int, int], int] = defaultdict(int)
    best: dict[tuple[int, int], int] = defaultdict(int)
    tallies: dict[str, dict[tuple[Any, ...], list[tuple[int, bool, datetime]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    topic_counts: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0, 0])
    for post in closed:
        kind = PostKind(post.kind)
        ch = channels[post.channel_id]
        answered = {a.member_id for a in answers[post.id]}
        if kind is PostKind.SCHEDULED:
            for key in list(streak):
                if key[0] == ch.id and key[1] not in answered:
                    streak[key] = 0
        covering = [
            season
            for season in seasons
            if (season.platform, season.workspace) == (ch.platform, ch.workspace)
            and (season.scope == "workspace" or season.channel_id == ch.id)
            and season.starts_at <= post.created_at
            and post.closed_at is not None
            and post.closed_at < season.ends_at
        ]
        if kind is PostKind.SCHEDULED:
            for season in covering:
                streak_board = 0 if season.scope == "channel" else ch.id
                for key in list(season_streak):
                    if key[:2] == (season.id, streak_board) and key[2] not in answered:
                        season_streak[key] = 0
        for a in answers[post.id]:
            key = (ch.id, a.member_id)
            scored = score_answer(kind, a.correct, streak[key])
            for season in covering:
                streak_board = 0 if season.scope == "channel" else ch.id
                own = (season.id, streak_board, a.member_id)
                season_streak[own] = score_answer(kind, a.correct, season_streak[own]).streak
                for board in sorted({0, streak_board}):
                    skey = (season.id, board, a.member_id)
                    season_rows[skey].append((scored.points, a.correct, a.answered_at))
                    season_best[skey] = max(season_best[skey], season_streak[own])
                    thirds = season_thirds[skey]
                    if a.answered_at < season.first_third_ends:
                        thirds[0] += 1
                        thirds[1] += int(a.correct)
                    if a.answered_at >= season.last_third_starts:
                        thirds[2] += 1
                        thirds[3] += int(a.correct)
                tkey = (season.id, a.member_id, topics[post.question_hash])
                season_topics[tkey][0] += 1
                season_topics[tkey][1] += int(a.correct)
                season_topics[tkey][2] += scored.points
            streak[key] = scored.streak
            best[key] = max(best[key], scored.streak)
            item = (scored.points, a.correct, a.answered_at)
            day = local_day(a.answered_at, ch.timezone)
            week = period_start(BoardWindow.WEEK, day)
            month = period_start(BoardWindow.MONTH, day)
            ws = f"workspace:{ch.platform}:{ch.workspace}"
            tallies["scores"][key].append(item)
            tallies["score_days"][(ch.id, a.member_id, day)].append(item)
            for board, starts in (
                (f"channel:{ch.id}:week", week),
                (f"channel:{ch.id}:month", month),
                (f"{ws}:day", day),
                (f"{ws}:week", week),
                (f"{ws}:month", month),
                (f"{ws}:all", ALL_TIME),
            ):
                tallies["score_periods"][(board, starts, a.member_id)].append(item)
            counts = topic_counts[(ch.id, a.member_id, topics[post.question_hash])]
            counts[0] += 1
            counts[1] += int(a.correct)

    def total(items: list[tuple[int, bool, datetime]]) -> tuple[Any, ...]:
        points = sum(p for p, _, _ in items)
        scoring = [at for p, _, at in items if p > 0]
        reached = max(scoring) if scoring else min(at for _, _, at in items)
        return (points, sum(c for _, c, _ in items), len(items), reached)

    out = {
        "scores": {k: (*total(v), streak[k], best[k]) for k, v in tallies["scores"].items()},
        "score_days": {k: total(v) for k, v in tallies["score_days"].items()},
        "score_periods": {k: total(v) for k, v in tallies["score_periods"].items()},
        "score_topics": {k: tuple(v) for k, v in topic_counts.items()},
        "season_scores": {
            k: (
                *total(v),
                season_streak[k] if k[1] != 0 or _channel_season(seasons, k[0]) else 0,
                season_best[k],
                *season_thirds[k],
                sum(c for _, c, _ in v) * 1_000_000 // len(v),
            )
            for k, v in season_rows.items()
        },
        "season_topics": {k: tuple(v) for k, v in season_topics.items()},
    }
    players: dict[tuple[Any, ...], int] = defaultdict(int)
    for (sid, board, _), v in out["season_scores"].items():
        players[(f"season:{sid}:{board}", ALL_TIME, v[0])] += 1
    for (cid, _), v in out["scores"].items():
        players[(f"channel:{cid}:all", ALL_TIME, v[0])] += 1
    for (cid, _, day), v in out["score_days"].items():
        players[(f"channel:{cid}:day", day, v[0])] += 1
    for (board, starts, _), v in out["score_periods"].items():
        players[(board, starts, v[0])] += 1
    out["score_histograms"] = {k: (n,) for k, n in players.items()}
    out["team_scores"] = _team_scores(out, on_team)
    return out


def _team_scores(
    out: dict[str, dict[tuple[Any, ...], tuple[Any, ...]]], on_team: dict[int, int]
) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """Each team's members summed on every workspace board period and season they have
    rows on: (members with an answer, the best three's points, everyone's points)."""
    points: dict[tuple[Any, ...], list[tuple[int, int]]] = defaultdict(list)
    for (board, starts, mid), v in out["score_periods"].items():
        if board.startswith("workspace:") and mid in on_team:
            points[(on_team[mid], board, starts)].append((v[0], v[2]))
    for (sid, board, mid), v in out["season_scores"].items():
        if board == 0 and mid in on_team:
            points[(on_team[mid], f"season:{sid}:0", ALL_TIME)].append((v[0], v[2]))
    return {
        key: (
            sum(1 for _, answered in rows if answered),
            sum(sorted((p for p, _ in rows), reverse=True)[:3]),
            sum(p for p, _ in rows),
        )
        for key, rows in points.items()
    }


def _channel_season(seasons: Any, season_id: int) -> bool:
    return any(season.id == season_id and season.scope == "channel" for season in seasons)


TOTALS = ("points", "correct", "answered", "reached_at")
STREAKS = (*TOTALS, "current_streak", "best_streak")
# What `actual` reads of each aggregate: its row, the key's columns, the value's columns.
AGGREGATES: dict[str, tuple[Any, tuple[str, ...], tuple[str, ...]]] = {
    "season_scores": (
        SeasonScoreRow,
        ("season_id", "board", "member_id"),
        (*STREAKS, "early_answered", "early_correct", "late_answered", "late_correct", "accuracy"),
    ),
    "season_topics": (
        SeasonTopicRow,
        ("season_id", "member_id", "topic"),
        ("answered", "correct", "points"),
    ),
    "scores": (ScoreRow, ("channel_id", "member_id"), STREAKS),
    "score_days": (ScoreDayRow, ("channel_id", "member_id", "day"), TOTALS),
    "score_periods": (ScorePeriodRow, ("board", "starts", "member_id"), TOTALS),
    "score_topics": (ScoreTopicRow, ("channel_id", "member_id", "topic"), ("answered", "correct")),
    "score_histograms": (ScoreHistogramRow, ("board", "starts", "points"), ("players",)),
    "team_scores": (TeamScoreRow, ("team_id", "board", "starts"), ("active", "top3", "points")),
}


async def actual(store: SqlStore) -> dict[str, dict[tuple[Any, ...], tuple[Any, ...]]]:
    out: dict[str, dict[tuple[Any, ...], tuple[Any, ...]]] = {}
    async with store.sessions() as s:
        for name, (row, key, value) in AGGREGATES.items():
            out[name] = {
                tuple(getattr(r, c) for c in key): tuple(getattr(r, c) for c in value)
                for r in (await s.execute(select(row))).scalars()
                if name != "score_histograms" or r.players  # an emptied bucket stays, empty
            }
    return out


async def _check_boards(
    service: QuizService, expected: dict[str, dict[tuple[Any, ...], tuple[Any, ...]]]
) -> None:
    """The all-time channel and workspace boards list what the recomputation ranks."""
    store = service.store
    assert isinstance(store, SqlStore)
    async with store.sessions() as s:
        names = {m.id: m.user_id for m in (await s.execute(select(MemberRow))).scalars()}
        ids = {
            (c.platform, c.workspace, c.channel): c.id
            for c in (await s.execute(select(ChannelRow))).scalars()
        }
    for ref, _ in CHANNELS:
        cid = ids[(str(ref.platform), ref.workspace, ref.channel)]
        rows = [(k[1], v) for k, v in expected["scores"].items() if k[0] == cid]
        want = sorted(rows, key=lambda kv: (-kv[1][0], -kv[1][1], kv[1][3], kv[0]))
        board = await store.scores.leaderboard(ref, None)
        assert [(r.user.user, r.points) for r in board.rows] == [(names[m], v[0]) for m, v in want]
        ws_key = f"workspace:{ref.platform}:{ref.workspace}:all"
        ws_rows = [(k[2], v) for k, v in expected["score_periods"].items() if k[0] == ws_key]
        ws_board = await store.scores.leaderboard(
            ref, None, scope=BoardScope.WORKSPACE, period=BoardPeriod(BoardWindow.ALL)
        )
        assert ws_board.players == len(ws_rows)
        ranks = {names[m]: 1 + sum(o[0] > v[0] for _, o in ws_rows) for m, v in ws_rows}
        assert all(ranks[r.user.user] == r.rank for r in ws_board.rows)
    await _check_season_and_team_boards(store, expected, names)


async def _check_season_and_team_boards(
    store: SqlStore, expected: dict[str, dict[tuple[Any, ...], tuple[Any, ...]]], names: Any
) -> None:
    """Each season's board (whole, and per channel) and the team boards (a window, a
    season) list what the recomputation gives."""
    async with store.sessions() as s:
        seasons = (await s.execute(select(SeasonRow).order_by(SeasonRow.id))).scalars().all()
        teams = dict(
            (
                await s.execute(
                    select(TeamMemberRow.member_id, TeamRow.name).join(
                        TeamRow, TeamRow.id == TeamMemberRow.team_id
                    )
                )
            ).all()
        )
        ch_ids = {c.id: c for c in (await s.execute(select(ChannelRow))).scalars()}
    for row in seasons:
        season = await store.seasons.get(row.id)
        assert season is not None
        boards = {k[1] for k in expected["season_scores"] if k[0] == row.id} | {0}
        for board in sorted(boards):
            rows = [
                (k[2], v) for k, v in expected["season_scores"].items() if k[:2] == (row.id, board)
            ]
            want = sorted(rows, key=lambda kv: (-kv[1][0], -kv[1][1], kv[1][3], kv[0]))[:10]
            where = None
            if board:
                c = ch_ids[board]
                where = ChannelRef(Platform(c.platform), c.workspace, c.channel)
            got = await store.seasons.board(season, None, where, min_answers=2)
            assert [(r.user.user, r.points) for r in got.rows] == [
                (names[m], v[0]) for m, v in want
            ]
            assert got.players == len(rows)
            accurate = sorted(
                (kv for kv in rows if kv[1][2] >= 2),
                key=lambda kv: (-(kv[1][1] * 1_000_000 // kv[1][2]), -kv[1][1], kv[1][3], kv[0]),
            )[:10]
            assert [r.user.user for r in got.accurate] == [names[m] for m, _ in accurate]
    ws = Workspace.of(MEMBERS["T1"][0])

    def team_scores(points: dict[int, tuple[int, int]]) -> list[TeamScore]:
        out = []
        for name in ("Foxes", "Owls"):
            members = [m for m, t in teams.items() if t == name]
            got = sorted((points.get(m, (0, 0)) for m in members), reverse=True)
            out.append(
                TeamScore(
                    name,
                    len(members),
                    sum(1 for _, n in got if n),
                    sum(p for p, _ in got[:3]),
                    sum(p for p, _ in got),
                )
            )
        return out

    ws_all = {
        k[2]: (v[0], v[2])
        for k, v in expected["score_periods"].items()
        if k[0] == "workspace:slack:T1:all"
    }
    got_all = (await store.leagues.standings(ws, BoardPeriod(BoardWindow.ALL))).scores
    assert sorted(got_all, key=lambda t: t.name) == team_scores(ws_all)
    first = next(r for r in seasons if r.workspace == "T1")
    in_season = {
        k[2]: (v[0], v[2]) for k, v in expected["season_scores"].items() if k[:2] == (first.id, 0)
    }
    got_season = (await store.leagues.standings(ws, season_id=first.id)).scores
    assert sorted(got_season, key=lambda t: t.name) == team_scores(in_season)
    assert await store.leagues.rule(ws) is TeamRule.TOP3


@pytest.mark.slow
async def test_migration_backfill_equals_what_the_folds_wrote(service: QuizService) -> None:
    """The revision that added `score_periods`, `score_histograms` and `score_topics` fills
    them from `scores`, `score_days` and the answers exactly as the folds would have."""
    athens = ChannelRef(Platform.SLACK, "T1", "C1")
    await service.store.settings.save(ChannelSettings(athens, timezone="Europe/Athens"))
    members = MEMBERS["T1"]
    for day in range(9):
        at = START + timedelta(days=day, hours=day % 5)
        await play(service, athens, {m: (day + i) % 3 != 0 for i, m in enumerate(members)}, at=at)
        await play(
            service,
            ChannelRef(Platform.SLACK, "T1", "C2"),
            {members[day % 3]: day % 2 == 0},
            kind=PostKind.ASK,
            at=at + timedelta(hours=3),
        )
    store = service.store
    assert isinstance(store, SqlStore)
    before = await actual(store)
    assert before["score_periods"] and before["score_topics"]
    async with store.sessions.begin() as s:
        await s.execute(delete(ScorePeriodRow))
        await s.execute(delete(ScoreTopicRow))
        await s.execute(delete(ScoreHistogramRow))

    migration = _migration("0003")

    def backfill(conn: Connection) -> None:
        with Operations.context(MigrationContext.configure(conn)):
            migration._backfill_periods()
            migration._backfill_histograms()
            migration._backfill_topics()

    async with store.engine.begin() as conn:
        await conn.run_sync(backfill)
    assert await actual(store) == before


@pytest.mark.slow
async def test_migration_downgrades_and_upgrades_again_to_the_models(db_url: str) -> None:
    engine = create_engine(db_url)
    below = _migration("0003").down_revision

    def migrated(conn: Connection, to: str) -> list[object]:
        migrate(conn, to)
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        return list(compare_metadata(ctx, Base.metadata))

    try:
        async with engine.begin() as conn:
            assert await conn.run_sync(migrated, below) != []  # the new tables are gone
        async with engine.begin() as conn:
            assert await conn.run_sync(migrated, "head") == []
    finally:
        await engine.dispose()


def _migration(revision: str) -> Any:
    script = ScriptDirectory.from_config(alembic_config()).get_revision(revision)
    assert script is not None and script.module is not None
    return script.module


async def test_benchmark_history_follows_the_rules(tmp_path: Path) -> None:
    """bench/leaderboard.py generates its aggregates with numpy; they equal the
    recomputation above, so the benchmark measures boards the bot would have built."""
    from bench.leaderboard import generate, load_sqlite

    history = generate(answers=6000, members=400, channels=12, workspaces=2, days=15)
    path = tmp_path / "bench.db"
    url = f"sqlite+aiosqlite:///{path}"
    engine = create_engine(url)
    await upgrade(engine)
    await engine.dispose()
    load_sqlite(path, history)
    async with SqlStore(url) as store:
        assert await actual(store) == await recompute(store)


def test_benchmark_sizes_it_cannot_fill_are_refused_at_once() -> None:
    """The generator stops with the reason instead of drawing forever: more answers than
    the members can give (once a day in at most 3 channels), or so dense that the less
    active members would have to fill every slot."""
    from bench.leaderboard import generate, size_problem

    assert size_problem(1_000_000, 1000, 10, 1, 720) == ""
    assert "at most 2,160,000" in size_problem(5_000_000, 1000, 10, 1, 720)
    assert "--channels" in size_problem(10, 10, 0, 1, 5)
    assert "--workspaces" in size_problem(10, 10, 2, 3, 5)
    with pytest.raises(ValueError, match="raise --days or --members"):
        generate(answers=200, members=10, channels=3, workspaces=1, days=5)
    with pytest.raises(ValueError, match="could not be drawn"):
        generate(answers=150, members=10, channels=3, workspaces=1, days=5)
