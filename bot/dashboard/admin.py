"""Admin pages: the review queue, the channel's packs and demo settings, question files,
schedules. Every change goes through the chat's own use case — a review button's click,
a form's submission, a `/quiz` command — so it is decided once and validated the same,
and its answer is the chat's answer."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.commands import Invocation, run_command
from bot.dashboard.overview import base_context
from bot.domain import Locale
from bot.errors import UserFacingError
from bot.forms import Submission
from bot.i18n import translator
from bot.interactions import Click
from bot.messages import Message
from bot.pages import Download, PageRequest, Redirect, Render
from bot.review import APPROVE, REASON, REASONS, REJECT_FORM, RETIRE, reasons_text
from bot.scheduling import Scheduler
from bot.scheduling.commands import fire_time
from bot.scheduling.spec import describe, format_duration
from bot.team import QuestionFileReader, SubmissionState, Workspace

PENDING = 20
# A schedule form's fields, in the order `/quiz schedule set` reads them (any order works).
SCHEDULE_FIELDS = ("time", "zone", "days")


def said(messages: list[Message]) -> str:
    """What the chat would have shown, as one notice."""
    return "\n\n".join(
        "\n".join(part for part in (m.title, m.body, m.footer) if part) for m in messages
    ).strip()


async def command(req: PageRequest, text: str) -> str:
    """Run `/quiz <text>` as the member would in the page's channel; the reply's text."""
    inv = Invocation(req.channel, req.member, req.locale, req.admin)
    replies = await run_command(req.quiz.commands, req.quiz.service, inv, text)
    return said([r.message for r in replies])


def _words(value: str) -> list[str]:
    """A form field as command words: no quoting tricks, each word whole."""
    return [w for w in value.replace('"', " ").replace("'", " ").split() if w]


# -- review ----------------------------------------------------------------------------


async def review(req: PageRequest) -> Render | Redirect:
    team = req.store.team
    if req.method == "POST":
        return Redirect("review", notice=await _decide(req), query=_keep(req))
    pending = await team.listing(req.workspace, SubmissionState.PENDING, limit=PENDING)
    flagged = await team.flagged(req.workspace, limit=PENDING)
    t = translator(req.locale)
    reported = []
    for f in flagged:
        question = await req.store.questions.get(f.question_hash)
        reported.append(
            {
                "flag": f,
                "prompt": question.text(req.locale).prompt if question else "",
                "reasons": reasons_text(f, t),
            }
        )
    return Render(
        "review.html",
        {
            **base_context(req),
            "pending": [
                {
                    "sub": s,
                    "text": s.question.text(req.locale),
                    "letter": chr(65 + s.question.answer),
                }
                for s in pending
            ],
            "reported": reported,
            "reasons": REASONS,
        },
    )


async def _decide(req: PageRequest) -> str:
    action = req.form.get("action", "")
    value = req.form.get("id", "").strip()[:80]
    channel = req.channel
    if action in (APPROVE, RETIRE):
        click = Click(action, 0, value, req.member, channel, req.locale, admin=req.admin)
        return said([await req.quiz.interactions.click(click)])
    if action == "reject":
        sub = Submission(
            REJECT_FORM,
            0,
            value,
            {REASON: req.form.get(REASON, "")[:300]},
            req.member,
            channel,
            req.locale,
            req.admin,
        )
        reply = await req.quiz.interactions.submit(sub)
        if reply.errors:
            return "\n".join(reply.errors.values())
        return said([reply.message] if reply.message else [])
    t = translator(req.locale)  # bound: pybabel extracts t("..."), not translator(...)("...")
    raise UserFacingError(t("Unknown action {value!r}.", value=action[:20]))


def _keep(req: PageRequest) -> dict[str, str]:
    chosen = req.chosen
    return {"channel": chosen.channel} if chosen is not None else {}


# -- the channel's packs and demos -----------------------------------------------------

CHANNEL_SETTINGS = {
    "builtin": ("packs builtin {value}", ("on", "off")),
    "team": ("packs team {value}", ("on", "off")),
    "generated": ("generated {value}", None),  # 0-100: the command checks it
    "demos": ("demos {value}", ("auto", "button", "off")),
}


async def channel_settings(req: PageRequest) -> Render | Redirect:
    channel = req.channel
    keep = {"channel": channel.channel}
    if req.method == "POST":
        t = translator(req.locale)
        name = req.form.get("setting", "")
        value = req.form.get("value", "").strip().lower()[:8]
        known = CHANNEL_SETTINGS.get(name)
        if known is None or (known[1] is not None and value not in known[1]):
            shown = name[:20] + " " + value
            raise UserFacingError(t("Unknown setting {value!r}.", value=shown))
        return Redirect(
            "channel", notice=await command(req, known[0].format(value=value)), query=keep
        )
    settings = await req.store.settings.get(channel)
    return Render(
        "channel.html",
        {**base_context(req), "channel": channel, "settings": settings},
    )


# -- question files --------------------------------------------------------------------


async def questions(req: PageRequest) -> Render:
    state = await req.quiz.service.pools.state(req.workspace)
    pending = await req.store.team.listing(req.workspace, SubmissionState.PENDING)
    return Render(
        "questions.html",
        {
            **base_context(req),
            "approved": len(state.approved),
            "retired": len(state.retired),
            "pending": len(pending),
            "result": None,
        },
    )


def export(reader: QuestionFileReader) -> Any:
    async def handler(req: PageRequest) -> Download:
        state = await req.quiz.service.pools.state(req.workspace)
        kept = [q for q in state.approved if q.id not in state.retired]
        text, _ = await asyncio.to_thread(reader.write_csv, kept)
        name = f"quizbot-{req.workspace.platform}-{_safe(req.workspace)}-questions.csv"
        return Download(name, "text/csv; charset=utf-8", text.encode())

    return handler


def _safe(ws: Workspace) -> str:
    return "".join(c if c.isalnum() else "-" for c in ws.id)[:40]


# -- schedules -------------------------------------------------------------------------


async def schedules(req: PageRequest) -> Render | Redirect:
    channel = req.channel
    keep = {"channel": channel.channel}
    if req.method == "POST":
        return Redirect("schedules", notice=await _change_schedule(req), query=keep)
    scheduler = req.quiz.registry.service(Scheduler)
    t = translator(req.locale)
    zone = (await req.store.settings.get(channel)).timezone
    rows = []
    for s in await scheduler.in_channel(channel) if scheduler is not None else []:
        rows.append(
            {
                "schedule": s,
                "when": describe(s.local_time, s.weekdays, s.cron, s.timezone),
                "window": format_duration_of(s.window_seconds, req.locale),
                "next": [fire_time(u, zone, t) for u in scheduler.upcoming(s, 3)]
                if scheduler is not None
                else [],
            }
        )
    return Render(
        "schedules.html", {**base_context(req), "channel": channel, "schedules": rows, "zone": zone}
    )


def format_duration_of(seconds: int | None, locale: Locale) -> str:
    from datetime import timedelta

    if seconds:
        return format_duration(timedelta(seconds=seconds))
    t = translator(locale)
    return t("until the next question (at most 24 h)")


async def _change_schedule(req: PageRequest) -> str:
    f = req.form
    if f.get("action") == "remove":
        number = f.get("id", "").strip()[:30]
        return await command(req, f"schedule off {number or '-'}")
    words = ["schedule", "set"]
    if f.get("cron", "").strip():
        words += ["cron", '"' + " ".join(_words(f["cron"])) + '"']
        words += _words(f.get("zone", ""))
    else:
        for name in SCHEDULE_FIELDS:
            words += _words(f.get(name, ""))
    if f.get("window", "").strip():
        words += ["window", *_words(f["window"])]
    if f.get("demo", "").strip():
        words += ["demo", *_words(f["demo"])]
    return await command(req, " ".join(words))


__all__ = ["channel_settings", "command", "export", "questions", "review", "said", "schedules"]
