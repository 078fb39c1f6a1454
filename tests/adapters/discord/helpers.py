"""Small steps the end-to-end tests share: ask through `/quiz ask`, read what was said."""

from __future__ import annotations

from typing import Any

from adapters.discord.payloads import MANAGE_GUILD
from bot.domain import ChannelRef, Platform, Question
from bot.quiz import QuizService
from tests.adapters.discord.fake_discord import (
    EPHEMERAL,
    MEMBER_PERMISSIONS,
    Call,
    FakeDiscord,
    Json,
)

ADMIN = MEMBER_PERMISSIONS | MANAGE_GUILD


def channel_of(fake: FakeDiscord) -> ChannelRef:
    return ChannelRef(Platform.DISCORD, fake.guild_id, fake.channel_id)


def question_messages(fake: FakeDiscord) -> list[Json]:
    return [m for m in fake.messages.values() if m["components"] and m["channel_id"]]


async def ask(fake: FakeDiscord, topic: str | None = None, **kw: Any) -> tuple[Json, int]:
    """``/quiz ask`` -> (the posted question message, its post id)."""
    before = len(fake.of("POST", rf"/channels/{fake.channel_id}/messages"))
    inter = await fake.command("ask", {"topic": topic} if topic else {}, **kw)
    calls = await fake.wait_for("POST", rf"/channels/{fake.channel_id}/messages", before + 1)
    # Settled too: the deferral's removal would otherwise land in the caller's next count.
    await fake.until(lambda: fake.settled(inter))
    posted = next(m for m in question_messages(fake) if m["embeds"] == calls[before].json["embeds"])
    return posted, post_id(posted)


async def ask_for(fake: FakeDiscord, service: QuizService) -> tuple[Json, int, Question]:
    """``/quiz ask`` -> (the posted question message, its post id, the question asked)."""
    message, post_id = await ask(fake)
    post = await service.store.posts.get(post_id)
    assert post is not None
    question = service.bank.get(post.question_id)
    assert question is not None
    return message, post_id, question


def custom_ids(message: Json) -> list[str]:
    return [b["custom_id"] for row in message["components"] for b in row["components"]]


async def click_choice(fake: FakeDiscord, message: Json, choice: int, **kw: Any) -> Json:
    """A member's click on `message`'s button for `choice` (0 is A): the interaction."""
    return await fake.click(message["id"], custom_ids(message)[choice], **kw)


def post_id(message: Json) -> int:
    return int(custom_ids(message)[0].split(":")[2])


async def said(fake: FakeDiscord, interaction: Json, count: int = 1) -> list[Json]:
    """What the bot said in answer to `interaction`, once it said `count` things."""
    await fake.until(lambda: len(fake.said_to(interaction)) >= count)
    return fake.said_to(interaction)


async def answered(fake: FakeDiscord, interaction: Json) -> None:
    """Until the bot has answered `interaction` in full. A command whose answer is public
    alone (a close, whose reveal is its answer) says "Done." when it beats the deadline, but
    after a deferral (a slow database) removes the "thinking…" line and says nothing."""
    removed = rf"/webhooks/{fake.app_id}/{interaction['token']}/messages/@original"
    await fake.until(
        lambda: (
            bool(fake.said_to(interaction))
            or any(c.status < 300 for c in fake.of("DELETE", removed))
        )
    )


def dm_to(fake: FakeDiscord, user_id: str) -> list[Json]:
    """The messages the bot sent in its DM channel with `user_id`."""
    channel = fake.dms.get(user_id)
    return [m for m in fake.messages.values() if channel and m["channel_id"] == channel]


def button(message: Json, prefix: str) -> str:
    """The custom id of `message`'s first button that starts with `prefix`."""
    return next(i for i in custom_ids(message) if i.startswith(prefix))


async def modal_for(fake: FakeDiscord, interaction: Json) -> Json:
    """The form the bot opened in answer to `interaction` (the initial response)."""
    await fake.until(lambda: fake.modal_of(interaction) is not None)
    modal = fake.modal_of(interaction)
    assert modal is not None
    return modal


def edits(fake: FakeDiscord, inter: Json) -> list[Call]:
    """The edits of `inter`'s original response (its deferred reply), as taken."""
    original = rf"/webhooks/{fake.app_id}/{inter['token']}/messages/@original"
    return [c for c in fake.of("PATCH", original) if c.status < 300]


async def final_edit(fake: FakeDiscord, inter: Json, expected: str) -> Call:
    """The edit of the deferred reply that says `expected`."""
    await fake.until(lambda: any(expected in text_of(c.json) for c in edits(fake, inter)))
    return next(c for c in edits(fake, inter) if expected in text_of(c.json))


async def answered_at_once(fake: FakeDiscord, inter: Json) -> str:
    """A refusal: the initial response itself (type 4, private); no deferral."""
    await fake.until(lambda: bool(fake.callbacks(inter)))
    (callback,) = fake.callbacks(inter)
    assert callback.json["type"] == 4 and callback.json["data"]["flags"] == EPHEMERAL
    return text_of(callback.json["data"])


def text_of(said_entry: Json) -> str:
    """Content plus embed title, description and footer."""
    parts = [said_entry.get("content") or ""]
    for e in said_entry.get("embeds") or []:
        parts += [e.get("title", ""), e.get("description", ""), e.get("footer", {}).get("text", "")]
    return "\n".join(p for p in parts if p)
