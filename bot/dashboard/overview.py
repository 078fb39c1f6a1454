"""Reading pages: the team overview, the leaderboards and the channel's demo results."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from bot.dashboard import charts
from bot.dashboard.ports import QuestionStats
from bot.domain import BoardScope, BoardWindow, ChannelRef, Schedule
from bot.i18n import translator
from bot.pages import PageNotFound, PageRequest, Render
from bot.scheduling import Scheduler
from bot.scheduling.commands import fire_time
from bot.scoring import local_day

DAYS = 28
WEEKS = 12
UPCOMING = 5


def today(req: PageRequest, zone: str) -> date:
    return local_day(req.quiz.service.clock.now(), zone)


def periods(req: PageRequest, zone: str) -> tuple[tuple[date, date], tuple[date, date]]:
    """The overview's days (the last 28, today's included) and weeks (the last 12, by
    their Mondays) in `zone`."""
    last = today(req, zone)
    monday = last - timedelta(days=last.weekday())
    return (last - timedelta(days=DAYS - 1), last), (monday - timedelta(weeks=WEEKS - 1), monday)


def base_context(req: PageRequest) -> dict[str, Any]:
    return {"channels": req.channels, "chosen": req.chosen}


async def overview(req: PageRequest) -> Render:
    t = translator(req.locale)
    channel = req.chosen
    found = await req.store.dashboard.overview(req.workspace, channel, lambda z: periods(req, z))
    zone = found.zone
    (first, _), (first_week, _) = found.periods
    days, weeks, questions = found.days, found.weeks, found.questions
    day_labels = [f"{first + timedelta(days=i):%m-%d}" for i in range(DAYS)]
    week_labels = [f"{first_week + timedelta(weeks=i):%m-%d}" for i in range(WEEKS)]
    easy, hard = charts.flagged(questions)
    return Render(
        "overview.html",
        {
            **base_context(req),
            "charts": [
                charts.activity_chart(days, day_labels, t),
                charts.weekly_chart(weeks, week_labels, t),
            ],
            "days": days,
            "weeks": weeks,
            "topic_chart": charts.topic_chart(questions, t),
            "topics": charts.topic_rates(questions),
            "calibration": charts.calibration_chart(questions, t),
            "questions": _calibration_rows(req, questions),
            "too_easy": easy,
            "too_hard": hard,
            "streaks": found.streaks,
            "upcoming": _upcoming(req, found.schedules),
            "zone": zone,
        },
    )


def _calibration_rows(req: PageRequest, questions: list[QuestionStats]) -> list[dict[str, Any]]:
    bank = req.quiz.service.bank
    rows = []
    for q in sorted(questions, key=lambda q: (q.rate, -q.answered, q.question_id)):
        found = bank.get(q.question_id)
        rows.append(
            {
                "stats": q,
                "prompt": found.text(req.locale).prompt if found is not None else "",
                "percent": charts.percent(q.rate),
                "tone": charts.tone_of(q.rate, q.answered).value,
            }
        )
    return rows


def _upcoming(req: PageRequest, schedules: list[tuple[Schedule, str]]) -> list[dict[str, Any]]:
    scheduler = req.quiz.registry.service(Scheduler)
    if scheduler is None:
        return []
    t = translator(req.locale)
    found: list[tuple[datetime, ChannelRef, str]] = []
    for schedule, zone in schedules:
        found += [(at, schedule.channel, zone) for at in scheduler.upcoming(schedule, UPCOMING)]
    found.sort(key=lambda f: f[0])
    return [{"channel": ref, "at": fire_time(at, zone, t)} for at, ref, zone in found[:UPCOMING]]


WINDOWS = {w.value: w for w in BoardWindow}


async def leaderboard(req: PageRequest) -> Render:
    window = WINDOWS.get(req.query.get("window", "all"))
    scope = BoardScope.WORKSPACE if req.query.get("scope") == "workspace" else BoardScope.CHANNEL
    if window is None:
        raise PageNotFound(req.query.get("window", ""))
    channel = req.channel
    board = await req.quiz.service.leaderboard(channel, req.member, window, scope)
    return Render(
        "leaderboard.html",
        {
            **base_context(req),
            "channel": channel,
            "board": board,
            "window": window.value,
            "scope": scope.value,
            "windows": [w.value for w in BoardWindow],
        },
    )


async def demos(req: PageRequest) -> Render:
    channel = req.channel
    runs = await req.store.demo_runs.in_channel(channel, limit=20)
    return Render("demos.html", {**base_context(req), "channel": channel, "runs": runs})


__all__ = ["demos", "leaderboard", "overview"]
