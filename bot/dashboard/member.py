"""The member's own page: results, strengths by topic, practice due, answer history; their
data file and forget-me (for the signed-in member only: every query is theirs)."""

from __future__ import annotations

from typing import Any

from bot.dashboard.overview import base_context
from bot.i18n import translator
from bot.interactions import Click
from bot.mydata import FORGET, export_file
from bot.pages import Download, PageRequest, Redirect, Render
from bot.stats import weakest_topic
from bot.team import member_digest

HISTORY = 20


async def me(req: PageRequest) -> Render:
    service = req.quiz.service
    channel = req.channel
    stats = await req.store.scores.player_stats(channel, req.member)
    board = await service.leaderboard(channel, req.member)
    now = service.clock.now()
    cards = await req.store.practice.cards(req.member)
    before = req.query.get("before", "")
    history = await req.store.dashboard.history(
        req.member, HISTORY, int(before) if before.isdigit() and len(before) < 19 else None
    )
    return Render(
        "member.html",
        {
            **base_context(req),
            "channel": channel,
            "stats": stats,
            "rank": board.caller,
            "players": board.players,
            "strengths": sorted(stats.topics, key=lambda x: (-x.accuracy, -x.answered, x.topic))
            if stats
            else [],
            "weakest": weakest_topic(stats) if stats else None,
            "due": sorted((c for c in cards if c.due_at <= now), key=lambda c: (c.box, c.due_at)),
            "later": sorted((c for c in cards if c.due_at > now), key=lambda c: c.due_at)[:5],
            "cards": len(cards),
            "history": [_entry(e, req) for e in history],
            "more": history[-1].answer_id if len(history) == HISTORY else None,
        },
    )


def _entry(e: Any, req: PageRequest) -> dict[str, Any]:
    text = e.question.text(req.locale)
    return {
        "entry": e,
        "prompt": text.prompt,
        "choices": [
            {
                "letter": chr(65 + i),
                "text": c,
                "chosen": i == e.choice,
                "key": i == e.question.answer,
            }
            for i, c in enumerate(text.choices)
        ],
        "explanation": text.explanation,
    }


async def my_data(req: PageRequest) -> Download:
    data = await req.store.members.export(req.member)
    file = export_file(req.member, data)
    return Download(file.filename, "application/json", file.data)


async def forget(req: PageRequest) -> Render | Redirect:
    """GET: what erasing means, and the button; POST: the chat's confirm button, pressed."""
    if req.method == "GET":
        return Render("forget.html", base_context(req))
    t = translator(req.locale)
    if req.form.get("confirm") != "yes":
        return Redirect("me/forget", notice=t("Tick the box to confirm, then press Erase."))
    click = Click(FORGET, 0, member_digest(req.member), req.member, req.channel, req.locale)
    message = await req.quiz.interactions.click(click)
    await req.store.dashboard.forget_clinic(req.member)
    return Redirect("/", notice=message.body, sign_out=True)


__all__ = ["forget", "me", "my_data"]
