"""Leaderboards at scale: 1,000,000 answers from 50,000 members across 1,000 channels, on
SQLite (file, WAL) and PostgreSQL; every board (day / week / month / all-time, channel and
workspace) with the caller's rank, through `QuizService.leaderboard`.

    .venv/bin/python bench/leaderboard.py [--answers 1000000] [--members 50000]
        [--channels 1000] [--workspaces 1] [--days 120] [--samples 300] [--pg URL]
        [--skip-answers] [--teams 50] [--team-members 1000] [--season-ends 100]

The history is generated directly (numpy), consistently: one scheduled question per
channel per day at 09:00 local time, answers from members of the channel's workspace
(Zipf-like activity, 1-3 channels each), and every aggregate computed from those answers
by the scoring rules (10 points, streak bonus over consecutive days, streaks broken by a
missed day), then bulk-inserted (executemany on SQLite, COPY on PostgreSQL). The default
puts every channel in ONE workspace: the workspace boards then rank all 50,000 members,
the hardest case for them.

Seasons and teams: workspace 0 runs one season over the whole history (its aggregates
generated as the fold writes them: board 0 and a board per channel, streaks, thirds,
accuracy, topics) and 1,000 of its members are in 50 teams; the season boards (whole,
per channel) and the team boards (all time, this week, the season) are timed as the
commands read them. Then 100 channel seasons of one workspace end at once on two
replicas (two engines on one database): 100 podiums, once each, within 10 s.

The boards are timed under the garbage collector's setting that `quizbot serve` uses
(`settled_heap`: the start-up heap frozen, a full collection after every 100 of the middle
generation); without it one full collection over the loaded history takes ~130 ms.

Targets: p99 <= 20 ms for each board on each database; the season end; then the answer
burst benchmark (`bench/answers.py`) is run again and its target lines are printed
(aggregates maintained).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert as sa_insert

from bench._common import PG_DEFAULT, bench_quiz, median, on_pg, percentile, target
from bot import basics, scheduling
from bot import seasons as seasons_feature
from bot.app import settled_heap
from bot.bank import question_to_dict
from bot.clock import FakeClock
from bot.domain import BoardScope, BoardWindow, ChannelRef, MessageRef, Platform, UserRef
from bot.features import Quiz
from bot.messages import Message
from bot.scoring import board_period
from bot.seasons import SeasonKeeper, SeasonScope
from bot.team import Workspace
from questions.loader import load_bank
from storage.engine import create_engine, upgrade
from storage.models import SeasonScoreRow, SeasonTopicRow
from storage.store import SqlStore

ZONES = ("UTC", "Europe/Athens", "America/New_York", "Asia/Tokyo", "Europe/London")
FIRST_DAY = date(2027, 1, 4)  # a Monday
GOAL_MS = 20.0
I64 = npt.NDArray[np.int64]


@dataclass
class History:
    """Rows for every table, as columns (numpy arrays or lists)."""

    tables: dict[str, dict[str, Any]]
    channel_ws: I64
    member_ws: I64
    workspaces: int
    days: int
    counts: dict[str, int]


def _us(day: date, zone: str, hour: int = 9) -> int:
    """Microseconds since the epoch of `hour`:00 local time on `day` in `zone`."""
    local = datetime(day.year, day.month, day.day, hour, tzinfo=ZoneInfo(zone))
    return int(local.timestamp()) * 1_000_000


def _groups(*keys: npt.NDArray[Any]) -> tuple[I64, I64]:
    """Sort order and the start index of each group of equal keys."""
    order = np.lexsort(keys[::-1]).astype(np.int64)
    change = np.zeros(len(order), dtype=bool)
    change[0] = True
    for k in keys:
        ks = k[order]
        change[1:] |= ks[1:] != ks[:-1]
    return order, np.flatnonzero(change).astype(np.int64)


def _totals(
    order: I64, starts: I64, points: I64, correct: I64, at: I64
) -> tuple[I64, I64, I64, I64]:
    """points, correct, answered, reached_at (the fold's rule) per group."""
    p, c, t = points[order], correct[order], at[order]
    sp = np.add.reduceat(p, starts)
    sc = np.add.reduceat(c, starts)
    n = np.diff(np.append(starts, len(order)))
    last_scoring = np.maximum.reduceat(np.where(p > 0, t, np.iinfo(np.int64).min), starts)
    first = np.minimum.reduceat(t, starts)
    return sp, sc, n, np.where(sp > 0, last_scoring, first)


CHANNELS_PER_MEMBER = 3
# Repeats of (member, post) are dropped, so more answers are drawn than kept; past this
# many draws per answer the sizes are too dense to fill (a few members hold most answers).
MAX_DRAWS_PER_ANSWER = 6


def size_problem(answers: int, members: int, channels: int, workspaces: int, days: int) -> str:
    """Why these sizes cannot be generated ("" when they can, as far as counting goes):
    each member answers at most once per post, in at most 3 channels, one post a day."""
    for name, value in (
        ("--answers", answers),
        ("--members", members),
        ("--channels", channels),
        ("--workspaces", workspaces),
        ("--days", days),
    ):
        if value < 1:
            return f"{name} must be at least 1 (got {value})"
    if workspaces > channels:
        return f"--workspaces ({workspaces}) cannot exceed --channels ({channels})"
    most = members * min(CHANNELS_PER_MEMBER, channels) * days
    if answers > most:
        return (
            f"--answers {answers:,} is more than {members:,} members can give: each answers "
            f"once a day in at most {min(CHANNELS_PER_MEMBER, channels)} channels, so "
            f"{days} days hold at most {most:,}; raise --days or --members"
        )
    return ""


def generate(
    answers: int,
    members: int,
    channels: int,
    workspaces: int,
    days: int,
    seed: int = 1,
    *,
    teams: int = 50,
    team_members: int = 1000,
) -> History:
    """The history; ValueError when the sizes cannot be filled (`size_problem`, or too
    dense to draw within `MAX_DRAWS_PER_ANSWER` draws per answer)."""
    if problem := size_problem(answers, members, channels, workspaces, days):
        raise ValueError(problem)
    rng = np.random.default_rng(seed)
    bank = sorted(load_bank(), key=lambda q: q.id)
    # Workspaces: every one gets a channel, the rest by a Zipf-like weight.
    weights = 1.0 / np.arange(1, workspaces + 1) ** 0.8
    channel_ws = np.sort(
        np.concatenate(
            [
                np.arange(workspaces),
                rng.choice(workspaces, channels - workspaces, p=weights / weights.sum()),
            ]
        )
    ).astype(np.int64)
    per_ws = np.bincount(channel_ws, minlength=workspaces)
    member_ws = rng.choice(workspaces, members, p=per_ws / per_ws.sum()).astype(np.int64)
    ws_first = np.concatenate([[0], np.cumsum(per_ws)[:-1]])
    zone_of = np.arange(channels) % len(ZONES)

    # Answers: a member (Zipf-like activity), one of their 1-3 channels, a day.
    # Repeats of (member, question) are dropped, so draw more and keep `answers` of them.
    activity = np.minimum(rng.zipf(1.7, members).astype(float), 100)
    slots = int(np.minimum(CHANNELS_PER_MEMBER, per_ws[member_ws]).sum()) * days
    if answers > slots:
        raise ValueError(
            f"--answers {answers:,} is more than the {slots:,} (member, channel, day) slots "
            "these members' workspaces hold; raise --days or --members"
        )
    draws = int(answers * 1.5)
    while True:
        if draws > answers * MAX_DRAWS_PER_ANSWER:
            raise ValueError(
                f"{answers:,} distinct answers could not be drawn from {slots:,} slots within "
                f"{answers * MAX_DRAWS_PER_ANSWER:,} draws (the less active members rarely "
                "answer); raise --days or --members, or lower --answers"
            )
        member = rng.choice(members, draws, p=activity / activity.sum()).astype(np.int64)
        ws = member_ws[member]
        pick = (member * 7919 + rng.integers(0, CHANNELS_PER_MEMBER, draws)) % per_ws[ws]
        channel = ws_first[ws] + pick
        day = rng.integers(0, days, draws).astype(np.int64)
        post_key = channel * days + day
        _, first_seen = np.unique(post_key * members + member, return_index=True)
        if len(first_seen) >= answers:
            break
        draws *= 2
    keep = np.sort(rng.choice(first_seen, answers, replace=False))
    member, channel, day, post_key = member[keep], channel[keep], day[keep], post_key[keep]
    ws = member_ws[member]
    n = len(member)

    # Posts: one per (channel, day) that has answers, at 09:00 local.
    post_keys, post_index = np.unique(post_key, return_inverse=True)
    post_channel, post_day = post_keys // days, post_keys % days
    nine = np.array(
        [[_us(FIRST_DAY + timedelta(days=d), z) for d in range(days)] for z in ZONES],
        dtype=np.int64,
    )
    post_at = nine[zone_of[post_channel], post_day]
    question = (post_channel * 7 + post_day) % len(bank)
    answer_of = np.array([q.answer for q in bank], dtype=np.int64)
    choices_of = np.array([q.choice_count for q in bank], dtype=np.int64)
    topic_id = np.array([sorted({q.topic for q in bank}).index(q.topic) for q in bank])
    topics = sorted({q.topic for q in bank})

    correct = (rng.random(n) < 0.6).astype(np.int64)
    q = question[post_index]
    choice = np.where(correct == 1, answer_of[q], (answer_of[q] + 1) % choices_of[q])
    at = post_at[post_index] + rng.integers(60, 8 * 3600, n) * 1_000_000

    # Streaks: consecutive scheduled questions of the channel answered correctly (a day
    # without a question does not break one; a question not answered does).
    channel_first = np.searchsorted(post_channel, post_channel)
    ordinal = (np.arange(len(post_keys)) - channel_first)[post_index]
    last_ordinal = np.bincount(post_channel, minlength=channels) - 1
    order, _ = _groups(channel, member, day)
    c_s, m_s, d_s, ok = channel[order], member[order], ordinal[order], correct[order]
    same = np.zeros(n, dtype=bool)
    same[1:] = (c_s[1:] == c_s[:-1]) & (m_s[1:] == m_s[:-1])
    follows = np.zeros(n, dtype=bool)
    follows[1:] = same[1:] & (d_s[1:] == d_s[:-1] + 1) & (ok[:-1] == 1)
    start = (ok == 1) & ~follows
    run = np.cumsum(start)
    run_first = np.flatnonzero(start)
    streak_sorted = np.where(ok == 1, np.arange(n) - run_first[np.maximum(run - 1, 0)] + 1, 0)
    streak = np.empty(n, dtype=np.int64)
    streak[order] = streak_sorted
    points = correct * (10 + np.clip(streak - 1, 0, 5))

    local_day = (np.datetime64(FIRST_DAY) + day).astype("datetime64[D]")
    week = local_day - ((local_day.astype(np.int64) - 4) % 7)  # 1970-01-05 was a Monday
    month = local_day.astype("datetime64[M]").astype("datetime64[D]")
    tables: dict[str, dict[str, Any]] = {}

    # scores (channel, member): totals, streak after the last question, best streak.
    o, s = _groups(channel, member)
    sp, sc, cnt, reached = _totals(o, s, points, correct, at)
    ends = np.append(s[1:], n) - 1
    by_day, _ = _groups(channel, member, day)  # the same groups, each in day order
    last = by_day[ends]
    current = np.where(ordinal[last] == last_ordinal[channel[last]], streak[last], 0)
    best = np.maximum.reduceat(streak[o], s)
    tables["scores"] = {
        "channel_id": channel[o[s]] + 1,
        "member_id": member[o[s]] + 1,
        "points": sp,
        "correct": sc,
        "answered": cnt,
        "current_streak": current,
        "best_streak": best,
        "reached_at": reached,
    }
    o, s = _groups(channel, member, day)
    sp, sc, cnt, reached = _totals(o, s, points, correct, at)
    tables["score_days"] = {
        "channel_id": channel[o[s]] + 1,
        "member_id": member[o[s]] + 1,
        "day": local_day[o[s]],
        "points": sp,
        "correct": sc,
        "answered": cnt,
        "reached_at": reached,
    }
    hist: dict[str, list[Any]] = {"board": [], "starts": [], "points": [], "players": []}

    def histogram(names: list[str], starts: npt.NDArray[Any], pts: I64) -> None:
        """Players per points of each board (names[i] and starts[i] are row i's board)."""
        ids = np.unique(np.array(names), return_inverse=True)[1].astype(np.int64)
        o, s = _groups(ids, starts.astype(np.int64), pts)
        hist["board"] += [names[i] for i in o[s].tolist()]
        hist["starts"].append(starts[o[s]])
        hist["points"].append(pts[o[s]])
        hist["players"].append(np.diff(np.append(s, len(o))))

    histogram(
        [f"channel:{c}:all" for c in tables["scores"]["channel_id"].tolist()],
        np.full(len(tables["scores"]["points"]), np.datetime64("1970-01-01"), "datetime64[D]"),
        tables["scores"]["points"],
    )
    histogram(
        [f"channel:{c}:day" for c in tables["score_days"]["channel_id"].tolist()],
        tables["score_days"]["day"],
        tables["score_days"]["points"],
    )
    periods: dict[str, list[Any]] = {k: [] for k in ("board", "starts", "member_id")}
    totals: dict[str, list[I64]] = {k: [] for k in ("points", "correct", "answered", "reached_at")}
    all_time = np.full(n, np.datetime64("1970-01-01"), dtype="datetime64[D]")
    for name, owner, starts in (
        ("channel:{}:week", channel + 1, week),
        ("channel:{}:month", channel + 1, month),
        ("workspace:slack:T{:04}:day", ws, local_day),
        ("workspace:slack:T{:04}:week", ws, week),
        ("workspace:slack:T{:04}:month", ws, month),
        ("workspace:slack:T{:04}:all", ws, all_time),
    ):
        o, s = _groups(owner, starts.astype(np.int64), member)
        for key, value in zip(totals, _totals(o, s, points, correct, at), strict=True):
            totals[key].append(value)
        periods["board"] += [name.format(x) for x in owner[o[s]].tolist()]
        periods["starts"].append(starts[o[s]])
        periods["member_id"].append(member[o[s]] + 1)
    tables["score_periods"] = {
        "board": periods["board"],
        "starts": np.concatenate(periods["starts"]),
        "member_id": np.concatenate(periods["member_id"]),
        **{k: np.concatenate(v) for k, v in totals.items()},
    }
    period_table = tables["score_periods"]
    histogram(period_table["board"], period_table["starts"], period_table["points"])
    o, s = _groups(channel, member, topic_id[q])
    tables["score_topics"] = {
        "channel_id": channel[o[s]] + 1,
        "member_id": member[o[s]] + 1,
        "topic": [topics[t] for t in topic_id[q][o[s]].tolist()],
        "answered": np.diff(np.append(s, n)),
        "correct": np.add.reduceat(correct[o], s),
    }
    created = _us(FIRST_DAY - timedelta(days=1), "UTC")
    answered = (channel, member, ws, q, topic_id, topics, points, correct, at, streak)
    tables.update(_league(answered, tables["scores"], channel_ws, member_ws, days, created))
    tables.update(_teams(rng, member_ws, teams, team_members, created))
    tables["team_scores"] = _team_scores(tables, len(member_ws))
    histogram(
        [f"season:1:{b}" for b in tables["season_scores"]["board"].tolist()],
        np.full(
            len(tables["season_scores"]["points"]), np.datetime64("1970-01-01"), "datetime64[D]"
        ),
        tables["season_scores"]["points"],
    )
    tables["score_histograms"] = {
        "board": hist["board"],
        **{k: np.concatenate(hist[k]) for k in ("starts", "points", "players")},
    }
    tables["channels"] = {
        "id": np.arange(1, channels + 1),
        "platform": ["slack"] * channels,
        "workspace": [f"T{w:04}" for w in channel_ws.tolist()],
        "channel": [f"C{c:05}" for c in range(channels)],
        "locale": ["en"] * channels,
        "timezone": [ZONES[z] for z in zone_of.tolist()],
        "demo_policy": ["off"] * channels,
        "created_at": np.full(channels, created),
    }
    tables["members"] = {
        "id": np.arange(1, members + 1),
        "platform": ["slack"] * members,
        "workspace": [f"T{w:04}" for w in member_ws.tolist()],
        "user_id": [f"U{m:06}" for m in range(members)],
        "display_name": [f"user{m}" for m in range(members)],
    }
    hashes = [q.content_hash for q in bank]
    tables["question_versions"] = {
        "hash": hashes,
        "question_id": [q.id for q in bank],
        "data": [json.dumps(question_to_dict(q), ensure_ascii=False) for q in bank],
        "created_at": np.full(len(bank), created),
    }
    npost = len(post_keys)
    tables["posts"] = {
        "id": np.arange(1, npost + 1),
        "channel_id": post_channel + 1,
        "question_id": [bank[i].id for i in question.tolist()],
        "question_hash": [hashes[i] for i in question.tolist()],
        "correct_choice": answer_of[question],
        "choice_count": choices_of[question],
        "kind": ["scheduled"] * npost,
        "state": ["closed"] * npost,
        "locale": ["en"] * npost,
        "created_at": post_at,
        "closes_at": post_at + 86_400_000_000,
        "closed_at": post_at + 86_400_000_000,
        "message_id": [f"m{i}" for i in range(npost)],
        "answer_count": np.bincount(post_index, minlength=npost),
    }
    tables["answers"] = {
        "id": np.arange(1, n + 1),
        "post_id": post_index + 1,
        "member_id": member + 1,
        "choice": choice,
        "correct": correct.astype(bool),
        "answered_at": at,
    }
    counts = {name: len(next(iter(cols.values()))) for name, cols in tables.items()}
    return History(tables, channel_ws, member_ws, workspaces, days, counts)


SEASON_ID = 1  # the bench's season: workspace 0, the whole history
ACCURACY = 1_000_000  # `season_scores.accuracy`: millionths


def _league(
    answered: tuple[Any, ...],
    scores: dict[str, Any],
    channel_ws: I64,
    member_ws: I64,
    days: int,
    created: int,
) -> dict[str, dict[str, Any]]:
    """A workspace season over workspace 0's channels and every day, and its aggregates as
    the fold writes them: board 0 (the season) and a board per channel, the season's
    streaks (the channels' own: the season starts before the first question), answers
    in its first and last thirds, topics."""
    channel, member, ws, q, topic_id, topics, points, correct, at, streak = answered
    start = created
    length = 3 * -(-(days + 2) // 3) * 86_400_000_000  # whole days, a multiple of three
    end, third = start + length, length // 3
    first_ends, last_starts = start + third, end - third
    mine = ws == 0
    early = (mine & (at < first_ends)).astype(np.int64)
    late = (mine & (at >= last_starts)).astype(np.int64)
    out: dict[str, dict[str, Any]] = {
        "seasons": {
            "id": [SEASON_ID],
            "platform": ["slack"],
            "workspace": ["T0000"],
            "channel_id": [1],
            "scope": ["workspace"],
            "name": ["Bench"],
            "starts_at": np.array([start]),
            "ends_at": np.array([end]),
            "first_third_ends": np.array([first_ends]),
            "last_third_starts": np.array([last_starts]),
            "state": ["active"],
            "created_by": ["bench"],
            "ended_at": [None],
            "podium_leased_at": [None],
            "podium_posted_at": [None],
            "podium_message_id": [None],
        }
    }
    # Per channel: the `scores` groups (channel, member) of workspace 0's channels.
    o, s = _groups(channel, member)
    keep = channel_ws[channel[o[s]]] == 0
    per_channel = {
        "board": scores["channel_id"][keep],
        "member_id": scores["member_id"][keep],
        "points": scores["points"][keep],
        "correct": scores["correct"][keep],
        "answered": scores["answered"][keep],
        "reached_at": scores["reached_at"][keep],
        "current_streak": scores["current_streak"][keep],
        "best_streak": scores["best_streak"][keep],
        "early_answered": np.add.reduceat(early[o], s)[keep],
        "early_correct": np.add.reduceat((early * correct)[o], s)[keep],
        "late_answered": np.add.reduceat(late[o], s)[keep],
        "late_correct": np.add.reduceat((late * correct)[o], s)[keep],
    }
    # The whole season: per member of workspace 0.
    sel = np.flatnonzero(mine)
    o, s = _groups(member[sel])
    o = sel[o]
    sp, sc, cnt, reached = _totals(o, s, points, correct, at)
    whole = {
        "board": np.zeros(len(s), dtype=np.int64),
        "member_id": member[o[s]] + 1,
        "points": sp,
        "correct": sc,
        "answered": cnt,
        "reached_at": reached,
        "current_streak": np.zeros(len(s), dtype=np.int64),
        "best_streak": np.maximum.reduceat(streak[o], s),
        "early_answered": np.add.reduceat(early[o], s),
        "early_correct": np.add.reduceat((early * correct)[o], s),
        "late_answered": np.add.reduceat(late[o], s),
        "late_correct": np.add.reduceat((late * correct)[o], s),
    }
    rows = {k: np.concatenate([whole[k], per_channel[k]]) for k in whole}
    out["season_scores"] = {
        "season_id": np.full(len(rows["board"]), SEASON_ID),
        **rows,
        "accuracy": rows["correct"] * ACCURACY // rows["answered"],
    }
    topic = topic_id[q][sel]
    o, s = _groups(member[sel], topic)
    o = sel[o]
    out["season_topics"] = {
        "season_id": np.full(len(s), SEASON_ID),
        "member_id": member[o[s]] + 1,
        "topic": [topics[t] for t in topic_id[q][o[s]].tolist()],
        "answered": np.diff(np.append(s, len(o))),
        "correct": np.add.reduceat(correct[o], s),
        "points": np.add.reduceat(points[o], s),
    }
    return out


def _teams(
    rng: np.random.Generator, member_ws: I64, teams: int, team_members: int, created: int
) -> dict[str, dict[str, Any]]:
    """`teams` teams in workspace 0, `team_members` of its members spread over them."""
    ws0 = np.flatnonzero(member_ws == 0)
    chosen = np.sort(rng.choice(ws0, min(team_members, len(ws0)), replace=False))
    names = [f"Team {i + 1:02}" for i in range(teams)]
    return {
        "leagues": {"platform": ["slack"], "workspace": ["T0000"], "rule": ["top3"]},
        "teams": {
            "id": np.arange(1, teams + 1),
            "platform": ["slack"] * teams,
            "workspace": ["T0000"] * teams,
            "name": names,
            "name_key": [n.casefold() for n in names],
            "created_at": np.full(teams, created),
        },
        "team_members": {
            "member_id": chosen + 1,
            "team_id": np.arange(len(chosen)) % teams + 1,
            "joined_at": np.full(len(chosen), created),
        },
    }


def _team_scores(tables: dict[str, dict[str, Any]], members: int) -> dict[str, Any]:
    """Each team's members summed on every workspace period and on the season, as the
    close keeps them (`storage.team_fold`): members with an answer, the best three's
    points, everyone's."""
    on_team = tables["team_members"]
    team_of = np.full(members + 1, -1)  # by member id (1 to `members`)
    team_of[on_team["member_id"]] = on_team["team_id"]
    groups: dict[tuple[int, str, Any], list[int]] = {}
    periods = tables["score_periods"]
    ours = np.flatnonzero(team_of[periods["member_id"]] >= 0)
    for i in ours.tolist():
        board = periods["board"][i]
        if board.startswith("workspace:"):
            key = (int(team_of[periods["member_id"][i]]), board, periods["starts"][i])
            groups.setdefault(key, []).append(int(periods["points"][i]))
    season = tables["season_scores"]
    for i in np.flatnonzero((season["board"] == 0) & (team_of[season["member_id"]] >= 0)).tolist():
        key = (int(team_of[season["member_id"][i]]), f"season:{SEASON_ID}:0", ALL_DAYS)
        groups.setdefault(key, []).append(int(season["points"][i]))
    keys = sorted(groups)
    return {
        "team_id": np.array([k[0] for k in keys], dtype=np.int64),
        "board": [k[1] for k in keys],
        "starts": np.array([k[2] for k in keys], dtype="datetime64[D]"),
        "active": np.array([len(groups[k]) for k in keys], dtype=np.int64),
        "top3": np.array([sum(sorted(groups[k])[-3:]) for k in keys], dtype=np.int64),
        "points": np.array([sum(groups[k]) for k in keys], dtype=np.int64),
    }


ALL_DAYS = np.datetime64("1970-01-01", "D")  # `starts` of a season's team rows

TIME_COLUMNS = {
    "reached_at",
    "created_at",
    "closes_at",
    "closed_at",
    "answered_at",
    "starts_at",
    "ends_at",
    "first_third_ends",
    "last_third_starts",
    "joined_at",
}


def _column(name: str, values: Any, dialect: str) -> list[Any]:
    """A column as Python values the driver takes (SQLite: SQLAlchemy's text formats)."""
    if isinstance(values, list):
        return values
    if name in TIME_COLUMNS:
        stamps = values.astype("datetime64[us]")
        if dialect == "sqlite":
            text = np.datetime_as_string(stamps, unit="us")
            return [s.replace("T", " ") for s in text.tolist()]
        return [d.replace(tzinfo=UTC) for d in stamps.astype(object).tolist()]
    if values.dtype.kind == "M":
        days = values.astype("datetime64[D]")
        if dialect == "sqlite":
            return np.datetime_as_string(days).tolist()  # type: ignore[no-any-return]
        return days.astype(object).tolist()  # type: ignore[no-any-return]
    return values.tolist()  # type: ignore[no-any-return]


LOAD_ORDER: tuple[str, ...] = (
    "channels",
    "members",
    "question_versions",
    "posts",
    "answers",
    "scores",
    "score_days",
    "score_periods",
    "score_histograms",
    "score_topics",
    "seasons",
    "season_scores",
    "season_topics",
    "leagues",
    "teams",
    "team_members",
    "team_scores",
)


def load_sqlite(path: Path, history: History) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")
    db.execute("BEGIN")
    for name in LOAD_ORDER:
        cols = history.tables[name]
        values = [_column(c, v, "sqlite") for c, v in cols.items()]
        marks = ", ".join("?" * len(cols))
        db.executemany(
            f"INSERT INTO {name} ({', '.join(cols)}) VALUES ({marks})", zip(*values, strict=True)
        )
    db.execute("COMMIT")
    db.execute("ANALYZE")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


async def load_postgres(url: str, history: History) -> None:
    import asyncpg

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        async with conn.transaction():
            await conn.execute("SET LOCAL session_replication_role = replica")  # no FK triggers
            for name in LOAD_ORDER:
                cols = history.tables[name]
                values = [_column(c, v, "postgresql") for c, v in cols.items()]
                await conn.copy_records_to_table(
                    name, records=zip(*values, strict=True), columns=list(cols)
                )
            for table in ("channels", "members", "posts", "answers", "seasons", "teams"):
                await conn.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT max(id) FROM {table}))"
                )
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


async def measure(url: str, history: History, samples: int) -> dict[str, list[float]]:
    bank = load_bank()
    now = datetime.combine(FIRST_DAY + timedelta(days=history.days - 1), datetime.min.time())
    clock = FakeClock(now.replace(hour=12, tzinfo=UTC))  # the last day in every zone used
    rng = random.Random(5)
    channels = history.tables["channels"]
    members_by_ws: dict[int, list[int]] = {}
    for m, w in enumerate(history.member_ws.tolist()):
        members_by_ws.setdefault(w, []).append(m)
    out: dict[str, list[float]] = {}
    async with (
        SqlStore(url, clock=clock) as store,
        bench_quiz(store, {}, clock, bank=bank) as quiz,
    ):
        service = quiz.service
        for scope in BoardScope:
            for window in BoardWindow:
                times: list[float] = []
                for i in range(samples + 20):
                    c = rng.randrange(len(channels["channel"]))
                    ref = ChannelRef(
                        Platform.SLACK, channels["workspace"][c], channels["channel"][c]
                    )
                    m = rng.choice(members_by_ws[int(history.channel_ws[c])])
                    caller = UserRef(Platform.SLACK, ref.workspace, f"U{m:06}")
                    t0 = time.perf_counter()
                    board = await service.leaderboard(ref, caller, window, scope)
                    if i >= 20:  # the first ones warm the caches
                        times.append(time.perf_counter() - t0)
                    assert board.players >= len(board.rows)
                out[f"{window}_{scope}"] = times
        largest = await service.leaderboard(
            ChannelRef(Platform.SLACK, channels["workspace"][0], channels["channel"][0]),
            None,
            BoardWindow.ALL,
            BoardScope.WORKSPACE,
        )
        print(f"  largest all-time workspace board: {largest.players} players", flush=True)
        out.update(await measure_league(store, history, clock, samples, rng))
    return out


async def measure_league(
    store: SqlStore, history: History, clock: FakeClock, samples: int, rng: random.Random
) -> dict[str, list[float]]:
    """Season boards (the whole season, a channel's) and team boards (all time, this
    week, the season), as `/quiz season board` and `/quiz team board` read them."""
    channels = history.tables["channels"]
    mine = [c for c in range(len(channels["channel"])) if int(history.channel_ws[c]) == 0]
    players = [m for m, w in enumerate(history.member_ws.tolist()) if w == 0]
    ws = Workspace(Platform.SLACK, "T0000")
    out: dict[str, list[float]] = {}
    for name in ("season_workspace", "season_channel", "team_all", "team_week", "team_season"):
        times: list[float] = []
        for i in range(samples + 20):
            c = rng.choice(mine)
            ref = ChannelRef(Platform.SLACK, channels["workspace"][c], channels["channel"][c])
            caller = UserRef(Platform.SLACK, ref.workspace, f"U{rng.choice(players):06}")
            t0 = time.perf_counter()
            season = None
            if name in ("season_workspace", "season_channel", "team_season"):
                season = await store.seasons.current(ref, clock.now())
            if name.startswith("season"):
                where = ref if name == "season_channel" else None
                assert season is not None
                board = await store.seasons.board(season, caller, where)
                assert board.players >= len(board.rows)
            else:
                if name == "team_season":
                    assert season is not None
                    scores = (await store.leagues.standings(ws, season_id=season.id)).scores
                else:
                    window = BoardWindow.ALL if name == "team_all" else BoardWindow.WEEK
                    zone = (await store.settings.get(ref)).timezone
                    period = board_period(window, clock.now(), zone)
                    scores = (await store.leagues.standings(ws, period=period)).scores
                assert scores
            if i >= 20:
                times.append(time.perf_counter() - t0)
        out[name] = times
    season = await store.seasons.current(ref, clock.now())
    assert season is not None
    whole = await store.seasons.board(season, None)
    teams = (await store.leagues.standings(ws, season_id=season.id)).scores
    print(
        f"  season board: {whole.players} players; {len(teams)} teams, "
        f"{sum(t.members for t in teams)} members",
        flush=True,
    )
    return out


class _PodiumChat:
    """Counts the podiums each replica posts (the platform's side, in memory)."""

    def __init__(self) -> None:
        self.posted: list[str] = []

    async def post_message(self, channel: ChannelRef, message: Message) -> MessageRef:
        self.posted.append(channel.channel)
        return MessageRef(channel, f"m{len(self.posted)}")

    async def reply_in_thread(self, parent: MessageRef, message: Message) -> MessageRef:
        raise NotImplementedError

    async def send_private(self, channel: ChannelRef, user: UserRef, message: Message) -> None:
        raise NotImplementedError

    async def update_message(self, ref: MessageRef, message: Message) -> None:
        raise NotImplementedError

    async def upload_image(self, parent: MessageRef, image: Any, comment: str = "") -> None:
        raise NotImplementedError


async def season_end(url: str, seasons: int, members: int) -> tuple[float, int, int]:
    """`seasons` channel seasons of one workspace end at once; two replicas (two engines
    on one database) run their pass at the end time together. Returns the seconds until
    every podium was posted, the podiums posted, and the distinct channels."""
    bank = load_bank()
    start = datetime(2027, 1, 4, 9, tzinfo=UTC)
    clock = FakeClock(start)
    ends = start + timedelta(weeks=1)
    chats = [_PodiumChat(), _PodiumChat()]
    features = [basics.feature, scheduling.feature, seasons_feature.feature]

    def quiz(store: SqlStore, chat: _PodiumChat) -> AbstractAsyncContextManager[Quiz]:
        return bench_quiz(
            store, {Platform.SLACK: chat}, clock, bank=bank, features=features, wakeups=False
        )

    async with (
        SqlStore(url, clock=clock) as a,
        SqlStore(url, clock=clock) as b,
        quiz(a, chats[0]) as qa,
        quiz(b, chats[1]) as qb,
    ):
        made = [
            await a.seasons.start(
                ChannelRef(Platform.SLACK, "TEND", f"C{i:03}"),
                SeasonScope.CHANNEL,
                f"S{i}",
                start,
                ends,
                "bench",
                start,
            )
            for i in range(seasons)
        ]
        users = [UserRef(Platform.SLACK, "TEND", f"U{m:04}", f"user{m}") for m in range(members)]
        rng = random.Random(3)
        async with a.sessions.begin() as s:
            ids = await a.refs.member_ids(s, users)
            rows, topics = [], []
            for season in made:
                for u in users:
                    answered = rng.randint(1, 40)
                    right = rng.randint(0, answered)
                    early = rng.randint(0, answered // 3)
                    late = rng.randint(0, answered // 3)
                    rows.append(
                        {
                            "season_id": season.id,
                            "board": 0,
                            "member_id": ids[u.key],
                            "points": 10 * right,
                            "correct": right,
                            "answered": answered,
                            "reached_at": start,
                            "current_streak": 0,
                            "best_streak": rng.randint(0, right),
                            "early_answered": early,
                            "early_correct": rng.randint(0, early),
                            "late_answered": late,
                            "late_correct": rng.randint(0, late),
                            "accuracy": right * ACCURACY // answered,
                        }
                    )
                    topics.append(
                        {
                            "season_id": season.id,
                            "member_id": ids[u.key],
                            "topic": "gpu",
                            "answered": answered,
                            "correct": right,
                            "points": 10 * right,
                        }
                    )
            await s.execute(sa_insert(SeasonScoreRow), rows)
            await s.execute(sa_insert(SeasonTopicRow), topics)
        keepers = [q.registry.service(SeasonKeeper) for q in (qa, qb)]
        assert keepers[0] is not None and keepers[1] is not None
        clock.set(ends)
        t0 = time.perf_counter()
        await asyncio.gather(*(k.run(ends) for k in keepers if k is not None))
        elapsed = time.perf_counter() - t0
        await asyncio.gather(
            *(k.run(ends + timedelta(minutes=5)) for k in keepers if k is not None)
        )
    posted = chats[0].posted + chats[1].posted
    return elapsed, len(posted), len(set(posted))


async def run_db(name: str, url: str, history: History, samples: int) -> dict[str, list[float]]:
    """Load `history` into a fresh database and time every board on it."""
    engine = create_engine(url)
    await upgrade(engine)
    await engine.dispose()
    t0 = time.perf_counter()
    if name == "sqlite":
        load_sqlite(Path(url.split("///", 1)[1]), history)
    else:
        await load_postgres(url, history)
    print(f"{name}: loaded in {time.perf_counter() - t0:.0f} s", flush=True)
    with settled_heap():  # the garbage collector as `quizbot serve` sets it
        return await measure(url, history, samples)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=1_000_000)
    parser.add_argument("--members", type=int, default=50_000)
    parser.add_argument("--channels", type=int, default=1_000)
    parser.add_argument("--workspaces", type=int, default=1)
    parser.add_argument("--days", type=int, default=120)
    parser.add_argument("--samples", type=int, default=300, help="queries per board")
    parser.add_argument("--pg", default=os.environ.get("QUIZBOT_TEST_POSTGRES_URL", PG_DEFAULT))
    parser.add_argument("--skip-answers", action="store_true", help="do not rerun answers.py")
    parser.add_argument("--teams", type=int, default=50)
    parser.add_argument("--team-members", type=int, default=1000)
    parser.add_argument(
        "--season-ends", type=int, default=100, help="channel seasons ending at once"
    )
    args = parser.parse_args()
    if problem := size_problem(
        args.answers, args.members, args.channels, args.workspaces, args.days
    ):
        parser.error(problem)
    if args.samples < 1:
        parser.error(f"--samples must be at least 1 (got {args.samples})")
    return args


async def main(args: argparse.Namespace) -> None:

    t0 = time.perf_counter()
    history = generate(
        args.answers,
        args.members,
        args.channels,
        args.workspaces,
        args.days,
        teams=args.teams,
        team_members=args.team_members,
    )
    sizes = ", ".join(f"{k} {v:,}" for k, v in history.counts.items())
    print(f"generated in {time.perf_counter() - t0:.0f} s: {sizes}", flush=True)

    results: dict[str, dict[str, list[float]]] = {}
    ends: dict[str, tuple[float, int, int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["sqlite"] = await run_db(
            "sqlite", f"sqlite+aiosqlite:///{Path(tmp) / 'boards.db'}", history, args.samples
        )
        end_db = f"sqlite+aiosqlite:///{Path(tmp) / 'ends.db'}"
        engine = create_engine(end_db)
        await upgrade(engine)
        await engine.dispose()
        ends["sqlite"] = await season_end(end_db, args.season_ends, 20)
    boards = await on_pg(
        args.pg, "lb", lambda url: run_db("postgresql", url, history, args.samples), migrate=False
    )
    if boards is not None:
        results["postgresql"] = boards
    end = await on_pg(args.pg, "ends", lambda url: season_end(url, args.season_ends, 20))
    if end is not None:
        ends["postgresql"] = end

    for db_name, boards in results.items():
        for board, times in boards.items():
            print(
                f"{db_name} {board}: p50 {median(times) * 1000:.1f} ms, "
                f"p99 {percentile(times, 99) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms "
                f"({len(times)} queries)"
            )
    for db_name, boards in results.items():
        for board, times in boards.items():
            p99 = percentile(times, 99) * 1000
            target(
                f"leaderboard_{db_name}_{board}_p99",
                f"{p99:.1f} ms",
                f"<= {GOAL_MS:.0f} ms",
                p99 <= GOAL_MS,
            )
    if "postgresql" not in results:
        target("leaderboard_postgresql_measured", "not reachable", "measured", False)
    for db_name, (elapsed, posted, distinct) in ends.items():
        print(
            f"{db_name} season end: {args.season_ends} seasons, two replicas: {posted} podiums "
            f"({distinct} channels) in {elapsed:.2f} s"
        )
        target(
            f"season_end_{db_name}_podiums_once",
            f"{posted} posted for {args.season_ends} seasons",
            f"{args.season_ends} exactly",
            posted == distinct == args.season_ends,
        )
        target(f"season_end_{db_name}_seconds", f"{elapsed:.2f} s", "<= 10 s", elapsed <= 10)


def answer_burst(pg: str) -> None:
    print("\nanswer burst (bench/answers.py), with the aggregates maintained:", flush=True)
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("answers.py")), "--pg", pg],
        capture_output=True,
        text=True,
        check=False,
    )
    print(done.stdout, end="", flush=True)
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)


if __name__ == "__main__":
    options = parse_args()
    asyncio.run(main(options))
    if not options.skip_answers:
        answer_burst(options.pg)
