"""Block Kit rendering: every message the core builds, for every question in the bank and
both locales, is within every Slack limit; long text is cut cleanly, never rejected."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.slack.render import (
    ELLIPSIS,
    escape,
    render,
    slack_len,
    to_mrkdwn,
    truncate,
)
from bot.demos import DEMO
from bot.domain import ChannelRef, Locale, Platform, Post, PostKind, PostState, Question, UserRef
from bot.messages import ANSWER, Button, Field, Message
from bot.render import question_message
from questions.loader import load_bank
from tests.adapters.bank_posts import bank_post
from tests.adapters.bank_posts import core_messages as bank_messages
from tests.adapters.slack.block_kit import LIMITS, block_kit_problems, utf16_len

CHANNEL = ChannelRef(Platform.SLACK, "T1", "C1")
ALICE = UserRef(Platform.SLACK, "T1", "U1", "Αλίκη <admin> & co")
NOW = datetime(2027, 3, 28, 7, 30, tzinfo=UTC)
POST_ID = 2_147_483_647  # the longest post id a 32-bit key gives


@cache
def questions() -> list[Question]:
    return sorted(load_bank(), key=lambda q: q.id)


def _post(q: Question, locale: Locale, state: PostState, kind: PostKind = PostKind.ASK) -> Post:
    return bank_post(q, locale, state, kind, post_id=POST_ID, channel=CHANNEL, at=NOW)


def core_messages(q: Question, locale: Locale) -> dict[str, Message]:
    """Every message the core shows on Slack for one question in one locale."""
    return bank_messages(q, locale, channel=CHANNEL, user=ALICE, post_id=POST_ID, at=NOW)


CASES = [
    pytest.param(q, locale, id=f"{q.id}-{locale.value}") for q in questions() for locale in Locale
]


def _collapse(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(("question", "locale"), CASES)
def test_every_bank_message_is_within_block_kit_limits_and_shown_in_full(
    question: Question, locale: Locale
) -> None:
    text = question.text(locale)
    for name, message in core_messages(question, locale).items():
        slack = render(message)
        assert block_kit_problems(slack.block_list, slack.text) == [], name
        shown = "\n".join(
            b["text"]["text"] for b in slack.blocks if b["type"] in ("section", "header")
        )
        assert ELLIPSIS not in shown, f"{name}: bank content must not be cut"
        if name == "question":
            for choice in text.choices:
                assert _collapse(escape(choice)) in _collapse(shown)
            assert _collapse(escape(text.prompt)) in _collapse(shown)
            buttons = [e for b in slack.blocks if b["type"] == "actions" for e in b["elements"]]
            decoded = [Button.decode(e["action_id"]) for e in buttons]
            assert decoded == [
                (ANSWER, 2_147_483_647, str(i)) for i in range(question.choice_count)
            ]
            assert [e["value"] for e in buttons] == [e["action_id"] for e in buttons]
        if name.startswith("outcome"):
            assert _collapse(escape(text.explanation)) in _collapse(shown)


def test_the_question_context_line_has_the_count_and_the_local_close_time() -> None:
    q = questions()[0]
    slack = render(question_message(_post(q, Locale.EN, PostState.OPEN), q, "Europe/Athens"))
    (context,) = [b for b in slack.blocks if b["type"] == "context"]
    line = context["elements"][0]["text"]
    assert (
        "12345 answered" in line and "2027-03-29 10:30 (Europe/Athens)" in line
    )  # UTC+3 after the DST change
    (header,) = [b for b in slack.blocks if b["type"] == "header"]
    assert q.topic in header["text"]["text"]


VOCABULARY = [
    "GPU",
    "memory",
    "fragmentation",
    "cudaMalloc",
    "κατακερματισμός",
    "μνήμης",
    "<tensor>",
    "a&b",
    "x<y",
    "😀",
    "🧠🔥",
    "*bold*",
    "_it_",
    "`code`",
    "https://pytorch.org/docs?a=1&b=2",
    "-",
    "—",
    "…",
    "\u00a0",
    "Ω",
    "a" * 17,
    "b" * 40,
]
SEPARATORS = [" ", " ", " ", "\n", "\n\n", " - ", "\n- ", " & ", " < "]


@st.composite
def long_text(draw: st.DrawFn, max_words: int = 4000) -> str:
    """Random prose (drawn from a seed: fast even at tens of thousands of characters)."""
    rng = draw(st.randoms(use_true_random=False))
    n = draw(st.integers(min_value=1, max_value=max_words))
    return "".join(rng.choice(VOCABULARY) + rng.choice(SEPARATORS) for _ in range(n)).strip()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=long_text(), title=long_text(60), footer=long_text(800), label=long_text(30))
def test_generated_long_text_is_cut_cleanly_and_never_rejected(
    body: str, title: str, footer: str, label: str
) -> None:
    buttons = tuple(Button(label, ANSWER, 1, str(i)) for i in range(4))
    fields = (Field(title, body[:5000]),) * 3
    slack = render(Message(title=title, body=body, buttons=buttons, fields=fields, footer=footer))
    assert block_kit_problems(slack.block_list, slack.text) == []

    sections = [b["text"]["text"] for b in slack.blocks if b["type"] == "section" and "text" in b]
    original = _collapse(to_mrkdwn(body))
    shown = _collapse("\n".join(sections))
    if shown != original:  # cut: a prefix ending at a word boundary, marked with "…"
        assert shown.endswith(ELLIPSIS)
        kept = shown.removesuffix(ELLIPSIS).rstrip()
        assert original.startswith(kept)
        # (the words here are shorter than a section, so no word had to be split)
        assert original[len(kept) : len(kept) + 1] in (" ", "")


@given(text=long_text(800), limit=st.integers(min_value=2, max_value=3000))
@settings(max_examples=80, deadline=None)
def test_truncate_fits_keeps_a_prefix_and_marks_the_cut(text: str, limit: int) -> None:
    cut = truncate(escape(text), limit)
    assert slack_len(cut) <= limit
    if cut == escape(text):
        return
    assert cut.endswith(ELLIPSIS)
    assert escape(text).startswith(cut.removesuffix(ELLIPSIS))
    assert not re.search(r"&[a-z]*$", cut.removesuffix(ELLIPSIS))  # no half entity


def test_a_demo_report_of_fifty_thousand_characters_is_cut_at_a_word_before_the_budget() -> None:
    report = "\n".join(
        f"step {i}: reserved {i * 3} MiB < allocated & free blocks {i % 7}" for i in range(900)
    )
    slack = render(Message(title="Demo", body=report, footer="device: simulated"))
    assert block_kit_problems(slack.block_list, slack.text) == []
    sections = [b["text"]["text"] for b in slack.blocks if b["type"] == "section"]
    assert len(sections) >= 4 and sections[-1].endswith(ELLIPSIS)
    kept = sections[-1].removesuffix(ELLIPSIS)
    last_line = kept.rsplit("\n", 1)[-1]
    assert escape(report).find(last_line) >= 0
    assert (escape(report) + " ")[escape(report).find(last_line) + len(last_line)] in " \n"
    assert slack.blocks[-1]["type"] == "context"  # the footer survives the cut


def test_truncate_counts_emoji_as_two_and_hard_cuts_a_word_longer_than_the_limit() -> None:
    cut = truncate("😀" * 2000, 3000)
    assert utf16_len(cut) <= 3000 and cut.startswith("😀" * 1499)
    assert truncate("x" * 200, 150) == "x" * 149 + ELLIPSIS
    assert truncate("word " * 40, 150).endswith("word" + ELLIPSIS)


def test_truncate_never_splits_an_escaped_entity() -> None:
    text = escape("a" * 10 + "<" * 50)
    for limit in range(12, 40):
        cut = truncate(text, limit).removesuffix(ELLIPSIS)
        assert re.fullmatch(r"a{10}(&lt;)*", cut), (limit, cut)


def test_many_buttons_and_fields_are_split_into_blocks_within_limits() -> None:
    buttons = tuple(Button(f"choice {i} " * 20, ANSWER, 9, str(i)) for i in range(60))
    fields = tuple(Field(f"f{i}", "v" * 300) for i in range(17))
    slack = render(Message(title="t", body="b", buttons=buttons, fields=fields))
    assert block_kit_problems(slack.block_list, slack.text) == []
    actions = [b for b in slack.blocks if b["type"] == "actions"]
    assert [len(b["elements"]) for b in actions] == [25, 25, 10]
    assert all(utf16_len(e["text"]["text"]) <= 75 for b in actions for e in b["elements"])
    field_blocks = [b for b in slack.blocks if "fields" in b]
    assert [len(b["fields"]) for b in field_blocks] == [10, 7]


def test_a_button_whose_id_would_not_fit_is_left_out_not_cut() -> None:
    long_value = "d" * 300
    ok = Button("Run", DEMO, 1, "fragmentation")
    slack = render(Message(body="x", buttons=(Button("Run", DEMO, 1, long_value), ok)))
    (actions,) = [b for b in slack.blocks if b["type"] == "actions"]
    assert [e["action_id"] for e in actions["elements"]] == [ok.encode()]


def test_markdown_subset_and_control_characters_become_slack_mrkdwn() -> None:
    assert to_mrkdwn("*bold* _it_ `x<y>&z`\n- one\n  - two") == (
        "*bold* _it_ `x&lt;y&gt;&amp;z`\n• one\n  • two"
    )
    slack = render(Message(title="A <b> & c", body="1 < 2"))
    assert slack.blocks[0]["text"]["text"] == "A <b> & c"  # plain_text: not escaped
    assert slack.blocks[1]["text"]["text"] == "1 &lt; 2"
    assert slack.text == "A &lt;b&gt; &amp; c\n1 &lt; 2"


def test_an_empty_message_still_has_a_fallback_text() -> None:
    slack = render(Message())
    assert slack.blocks == () and slack.text.strip() == ""
    assert len(slack.text) >= 1
    assert LIMITS["blocks"] == 50
