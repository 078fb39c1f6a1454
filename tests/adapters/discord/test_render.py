"""The renderer keeps every Discord limit, for every question in the bank in both locales,
and cuts over-long text cleanly."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import discord
import pytest

from adapters.discord.render import (
    CONTENT_LIMIT,
    ELLIPSIS,
    Rendered,
    close_time,
    content,
    embed_length,
    message_json,
    render,
    to_markdown,
    truncate,
)
from bot.bank import QuestionBank
from bot.demos import DEMO
from bot.domain import ChannelRef, Locale, Platform, Post, PostKind, PostState, Question, UserRef
from bot.messages import ANSWER, Button, Field, Message
from bot.render import local_time, question_message
from tests.adapters.bank_posts import bank_post, core_messages

CHANNEL = ChannelRef(Platform.DISCORD, "811111111111111111", "822222222222222222")
NOW = datetime(2027, 3, 29, 6, 30, tzinfo=UTC)
POST_ID = 9_999_999_999  # a long id: custom_id room
LONG_NAME = "Αλεξάνδρα-Παναγιώτα " * 8  # display names can be long


def assert_within_discord_limits(r: Rendered) -> None:
    e = r.embed
    assert len(e.get("title", "")) <= 256
    assert len(e.get("description", "")) <= 4096
    assert len(e.get("fields", [])) <= 25
    for f in e.get("fields", []):
        assert 0 < len(f["name"]) <= 256 and 0 < len(f["value"]) <= 1024
    assert len(e.get("footer", {"text": ""})["text"]) <= 2048
    assert embed_length(e) <= 6000
    rows = r.rows
    assert len(rows) <= 5 and all(len(row) <= 5 for row in rows)
    for b in r.buttons:
        assert 0 < len(b.label) <= 80
        assert len(b.custom_id) <= 100
    # discord.py's own embed model accepts it too.
    discord.Embed.from_dict(dict(e))
    assert len(r.components()) == len(rows)


def post_of(q: Question, locale: Locale, state: PostState, kind: PostKind = PostKind.ASK) -> Post:
    return bank_post(q, locale, state, kind, post_id=POST_ID, channel=CHANNEL, at=NOW)


def every_message(q: Question, locale: Locale) -> list[Message]:
    user = UserRef(Platform.DISCORD, CHANNEL.workspace, "1", LONG_NAME)
    messages = core_messages(q, locale, channel=CHANNEL, user=user, post_id=POST_ID, at=NOW)
    return list(messages.values())


@pytest.mark.parametrize("locale", list(Locale), ids=str)
def test_every_bank_message_fits_discord_in_both_locales(
    bank: QuestionBank, locale: Locale
) -> None:
    assert len(bank) > 0
    for q in bank:
        for message in every_message(q, locale):
            assert_within_discord_limits(render(message))


@pytest.mark.parametrize("locale", list(Locale), ids=str)
def test_bank_questions_render_whole_with_one_lettered_button_per_choice(
    bank: QuestionBank, locale: Locale
) -> None:
    for q in bank:
        r = render(question_message(post_of(q, locale, PostState.OPEN), q, "UTC"))
        text = q.text(locale)
        description = r.embed["description"]
        assert ELLIPSIS not in description  # nothing of a real question is cut
        assert text.prompt in description
        for i, choice in enumerate(text.choices):
            assert f"**{'ABCDEFGH'[i]}.** {choice}" in description
        assert [b.label for b in r.buttons] == list("ABCDEFGH"[: len(text.choices)])
        assert [b.custom_id for b in r.buttons] == [
            f"quiz:answer:9999999999:{i}" for i in range(len(text.choices))
        ]


def test_closed_question_has_no_buttons_and_no_timestamp(bank: QuestionBank) -> None:
    q = next(iter(bank))
    r = render(question_message(post_of(q, Locale.EN, PostState.CLOSED), q, "UTC"))
    assert r.buttons == () and r.components() == []
    assert "<t:" not in r.embed["description"]


def test_open_question_shows_the_close_time_as_a_discord_timestamp(bank: QuestionBank) -> None:
    q = next(iter(bank))
    post = post_of(q, Locale.EL, PostState.OPEN)
    r = render(question_message(post, q, "Europe/Athens"))
    assert post.closes_at is not None
    unix = int(post.closes_at.timestamp())
    assert f"<t:{unix}:f>" in r.embed["description"]
    assert "2027-03-30 09:30 (Europe/Athens)" in r.embed["footer"]["text"]  # channel's zone


def test_close_time_reads_back_what_local_time_wrote() -> None:
    at = datetime(2027, 10, 31, 0, 30, tzinfo=UTC)  # the night Athens leaves summer time
    for zone in ("Europe/Athens", "America/Argentina/Buenos_Aires", "UTC", "Etc/GMT+5"):
        back = close_time(f"3 answered · closes {local_time(at, zone)}")
        assert back is not None and back.timestamp() == at.timestamp()
    assert close_time("3 answered · closed") is None


def test_message_json_carries_the_embed_and_the_button_rows() -> None:
    msg = Message(body="q?", buttons=(Button("A", ANSWER, 7, "0"),))
    body = message_json(msg)
    assert body["embeds"][0]["description"] == "q?"
    assert body["components"] == [
        {
            "type": 1,
            "components": [{"type": 2, "style": 2, "label": "A", "custom_id": "quiz:answer:7:0"}],
        }
    ]
    assert message_json(Message(body="closed"))["components"] == []  # an edit removes them


def test_markdown_bold_becomes_discord_bold_outside_code() -> None:
    assert to_markdown("*A.* choice") == "**A.** choice"
    assert to_markdown("use `a*b*c` or ```\n*x*\n```") == "use `a*b*c` or ```\n*x*\n```"
    assert to_markdown("_italic_ and\n- list *item*") == "_italic_ and\n- list **item**"
    assert to_markdown("2 * 3 * 4") == "2 * 3 * 4"


def test_truncate_cuts_at_a_word_boundary_and_marks_the_cut() -> None:
    text = "word " * 1000
    out = truncate(text, 4096)
    assert len(out) <= 4096 and out.endswith(ELLIPSIS)
    kept = out[: -len(ELLIPSIS)]
    assert text.startswith(kept) and kept.endswith("word")
    assert truncate("short", 80) == "short"


def test_truncate_never_leaves_code_or_bold_open() -> None:
    text = "intro line\n```python\n" + "x = 1\n" * 200 + "```"
    out = truncate(text, 300)
    assert out.count("```") % 2 == 0 and len(out) <= 300
    assert truncate("**" + "bold words " * 50 + "**", 100).count("**") % 2 == 0
    assert truncate("`" + "code " * 50 + "`", 60).count("`") % 2 == 0


def test_long_labels_many_buttons_and_long_ids_are_brought_within_limits() -> None:
    buttons = tuple(Button("L" * 120, ANSWER, 1, str(i)) for i in range(30))
    too_long = Button("demo", DEMO, 1, "d" * 120)
    r = render(Message(title="t", body="b", buttons=(too_long, *buttons)))
    assert_within_discord_limits(r)
    assert len(r.buttons) == 25 and [len(row) for row in r.rows] == [5] * 5
    assert all(b.custom_id != too_long.encode() for b in r.buttons)  # could not be routed


def test_the_6000_total_is_kept_when_every_part_is_at_its_own_limit() -> None:
    fields = tuple(Field("n" * 300, "v " * 600) for _ in range(30))
    message = Message(title="T" * 300, body="body " * 2000, fields=fields, footer="f" * 3000)
    r = render(message)
    assert_within_discord_limits(r)
    assert r.embed["description"].endswith(ELLIPSIS)


def test_content_fits_a_message() -> None:
    assert len(content("caption " * 400)) <= CONTENT_LIMIT


def test_image_is_shown_from_the_attachment() -> None:
    from bot.messages import Image

    r = render(Message(title="plot", image=Image("frag.png", b"\x89PNG")))
    assert r.embed["image"] == {"url": "attachment://frag.png"}


def test_timestamps_only_in_the_description_not_the_footer(bank: QuestionBank) -> None:
    q = next(iter(bank))
    r = render(question_message(post_of(q, Locale.EN, PostState.OPEN), q, "UTC"))
    assert not re.search(r"<t:\d+", r.embed["footer"]["text"])  # footers show it raw
