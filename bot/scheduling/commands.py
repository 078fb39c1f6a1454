"""`/quiz schedule set|list|off [id]` (admins only). Answers echo the next three fire
times in the channel's time zone."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from bot.commands import Admin, Command, Invocation, Reply
from bot.domain import Schedule
from bot.errors import UserFacingError
from bot.features import Feature, Parts
from bot.i18n import N_, Translator, translator
from bot.messages import Message
from bot.quiz import QuizService
from bot.quoting import cut
from bot.scheduling.scheduler import Scheduler
from bot.scheduling.spec import (
    EXAMPLE_TIME,
    describe,
    find_zone,
    format_duration,
    parse_schedule_id,
    parse_schedule_request,
)

USAGE = "schedule set|list|off [id]"
WEEKDAYS_SHORT = (N_("Mon"), N_("Tue"), N_("Wed"), N_("Thu"), N_("Fri"), N_("Sat"), N_("Sun"))


def fire_time(at: datetime, zone: str, t: Translator) -> str:
    """``Mon 2027-03-29 09:30 (Europe/Athens)``."""
    local = at.astimezone(find_zone(zone) or ZoneInfo("UTC"))
    return f"{t(WEEKDAYS_SHORT[local.weekday()])} {local:%Y-%m-%d %H:%M} ({zone})"


def _window_text(schedule: Schedule, t: Translator) -> str:
    if schedule.window_seconds:
        return format_duration(timedelta(seconds=schedule.window_seconds))
    return t("until the next question (at most 24 h)")


def _schedule_lines(
    scheduler: Scheduler, schedule: Schedule, zone: str, t: Translator
) -> list[str]:
    when = describe(schedule.local_time, schedule.weekdays, schedule.cron, schedule.timezone)
    lines = [
        t(
            "*#{id}* · {when} · answer window: {window}",
            id=schedule.id,
            when=when,
            window=_window_text(schedule, t),
        ),
    ]
    upcoming = scheduler.upcoming(schedule, 3)
    lines.append(t("Next: {times}", times="; ".join(fire_time(u, zone, t) for u in upcoming)))
    return lines


def feature(parts: Parts) -> Feature:
    """Scheduled questions: the scheduler (catch-up, wake-ups, reveals and resends) and
    the admin-only ``/quiz schedule``."""
    scheduler = Scheduler(
        parts.service,
        parts.store.schedules,
        clock=parts.clock,
        metrics=parts.metrics,
        use_apscheduler=parts.wakeups,
        hooks=parts.registry,
    )
    return schedule_feature(scheduler)


def schedule_feature(scheduler: Scheduler) -> Feature:

    async def schedule(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        t = translator(inv.locale)
        action = args[0].lower() if args else "list"
        if action == "set":
            return await _set(service, scheduler, inv, args[1:], t)
        if action in ("list", "ls"):
            return await _list(service, scheduler, inv, t)
        if action in ("off", "stop", "remove", "delete"):
            return await _off(service, scheduler, inv, args[1:], t)
        raise UserFacingError(
            t(
                "Unknown schedule action {value!r}: use set, list or off. "
                "Example that works: {example}",
                value=args[0],
                example=EXAMPLE_TIME,
            )
        )

    return Feature(
        "schedule",
        commands=[
            Command(
                "schedule", schedule, USAGE, N_("daily questions for this channel"), Admin.ALWAYS
            )
        ],
        services=[scheduler],
        checks={"scheduler": scheduler.healthy},
    )


async def _set(
    service: QuizService, scheduler: Scheduler, inv: Invocation, words: list[str], t: Translator
) -> list[Reply]:
    settings = await service.store.settings.get(inv.channel)
    request = parse_schedule_request(words, t, settings.timezone, scheduler.clock.now())
    if request.demo_policy is None:
        request = replace(request, demo_policy=settings.demo_policy)
    created = await scheduler.add(inv.channel, request, inv.user.user)
    if settings.timezone != request.timezone:
        # Close times in the channel's questions are shown in the schedule's zone.
        await service.store.settings.save(replace(settings, timezone=request.timezone))
    body = [
        t(
            "Scheduled questions for this channel: {when}.",
            when=describe(created.local_time, created.weekdays, created.cron, created.timezone),
        ),
        t("Answer window: {window}.", window=_window_text(created, t)),
        t("Next three:"),
    ]
    body += [f"- {fire_time(u, request.timezone, t)}" for u in scheduler.upcoming(created, 3)]
    body.append(t("Turn it off with /quiz schedule off {id}.", id=created.id))
    return [
        Reply(
            Message(title=t("Schedule #{id}", id=created.id), body="\n".join(body)),
            private=False,
        )
    ]


async def _list(
    service: QuizService, scheduler: Scheduler, inv: Invocation, t: Translator
) -> list[Reply]:
    schedules = await scheduler.in_channel(inv.channel)
    if not schedules:
        return [
            Reply(
                Message(
                    body=t(
                        "This channel has no schedules. Example that works: {example}",
                        example=EXAMPLE_TIME,
                    )
                )
            )
        ]
    zone = (await service.store.settings.get(inv.channel)).timezone
    lines: list[str] = []
    for s in schedules:
        lines += _schedule_lines(scheduler, s, zone, t)
    return [Reply(Message(title=t("Schedules in this channel"), body="\n".join(lines)))]


async def _off(
    service: QuizService, scheduler: Scheduler, inv: Invocation, words: list[str], t: Translator
) -> list[Reply]:
    schedule_id: int | None = None
    if words:
        # Checked before storage sees it: 10**23 does not fit a 64-bit key.
        schedule_id = parse_schedule_id(words[0])
        if schedule_id is None:
            raise UserFacingError(
                t(
                    "{value!r} is not a schedule number: /quiz schedule list shows them. "
                    "Example that works: /quiz schedule off 3",
                    value=cut(words[0]),
                )
            )
    ids = await scheduler.disable(inv.channel, schedule_id)
    if not ids:
        if schedule_id is not None:
            raise UserFacingError(
                t(
                    "There is no schedule #{id} in this channel: /quiz schedule list shows them.",
                    id=schedule_id,
                )
            )
        raise UserFacingError(t("This channel has no schedules to turn off."))
    numbers = ", ".join(f"#{i}" for i in ids)
    text = t.n(
        "Turned off {count} schedule: {numbers}.",
        "Turned off {count} schedules: {numbers}.",
        len(ids),
        numbers=numbers,
    )
    return [Reply(Message(body=text), private=False)]


__all__ = ["feature", "fire_time", "schedule_feature"]
