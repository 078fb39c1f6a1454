"""Team packs on Slack, end to end against the fake Slack: `/quiz submit` opens a modal
whose problems come back in it, review buttons (admins only, one decision), `/quiz ask
team`, "Report a problem", `/quiz mydata` as a file in a direct message, `/quiz
forget-me`, and question files sent to the bot in a direct message."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.domain import ChannelRef, Platform
from tests.adapters.features import TEAM_FEATURES
from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.conftest import SlackHttp, SlackWith
from tests.adapters.slack.fake_slack import Call, FakeSlack
from tests.core.team import GOOD
from tests.questions.test_team_files import HEADER, ROW

ANN, BOB, ROOT = "U0ANN", "U0BOB", "U0ROOT"  # U0ROOT is in QUIZBOT_ADMINS
CHANNEL = ChannelRef(Platform.SLACK, rq.TEAM, rq.CHANNEL)


@pytest.fixture
async def slack(slack_with: SlackWith) -> AsyncIterator[SlackHttp]:
    """Team packs, as `serve` wires them (question files in a DM included)."""
    async with slack_with(*TEAM_FEATURES) as http:
        yield http


async def submit_modal(
    slack: SlackHttp, values: dict[str, str], user: str = ANN
) -> tuple[int, str]:
    slack.fake.views.clear()
    await slack.command("submit", user=user)
    await slack.adapter.idle()
    (view,) = slack.fake.views
    body = rq.interaction_body(rq.view_submission(view["callback_id"], values, user=user))
    return await slack.send(body, rq.signed_headers(body))


def responses_to(fake: FakeSlack, user: str) -> list[Call]:
    return [c for c in fake.calls_to("response_url") if c.args["name"].endswith(f"-{user}")]


def action(calls: list[Call], prefix: str) -> str:
    return next(a for c in reversed(calls) for a in c.action_ids if a.startswith(prefix))


async def test_submit_review_ask_flag_mydata_and_forget_me_on_slack(
    slack: SlackHttp, fake_slack: FakeSlack
) -> None:
    status, text = await submit_modal(slack, dict.fromkeys(GOOD, ""))
    errors = json.loads(text)
    assert status == 200 and errors["response_action"] == "errors"
    assert set(errors["errors"]) == set(GOOD)  # every empty field, in the modal
    (view,) = fake_slack.views
    assert view["title"]["text"] == "Submit a question" and len(view["blocks"]) == 5
    assert await submit_modal(slack, GOOD) == (200, "")
    await slack.adapter.idle()
    assert any("waits for review" in t for t in slack.private_to(ANN))

    await slack.command("review", user=ROOT)
    await slack.adapter.idle()
    approve = action(responses_to(fake_slack, ROOT), "quiz:approve:0:")
    await slack.press(approve, user=BOB)
    await slack.adapter.idle()
    assert any("Only workspace admins" in c.text for c in responses_to(fake_slack, BOB))
    await slack.press(approve, user=ROOT)
    await slack.press(approve, user=ROOT)
    await slack.adapter.idle()
    said = [c.text for c in responses_to(fake_slack, ROOT)]
    assert any("joins the team pack" in t for t in said)
    assert any("already approved by" in t for t in said)
    assert any("was approved by" in t for t in slack.private_to(ANN))  # chat.postEphemeral

    await slack.command("ask team", user=ANN)
    await slack.adapter.idle()
    (question,) = [c for c in fake_slack.calls_to("chat.postMessage") if GOOD["prompt"] in c.text]
    post = await slack.service.open_post(CHANNEL)
    assert post is not None and f"quiz:answer:{post.id}:1" in question.action_ids
    await slack.click(post.id, 1, user=BOB)
    await slack.service.close(post.id)
    (reveal,) = [c for c in fake_slack.calls_to("chat.postMessage") if "thread_ts" in c.args]
    flag = action([reveal], "quiz:flag:")
    fake_slack.views.clear()
    await slack.press(flag, user=BOB)
    await slack.adapter.idle()
    (form,) = fake_slack.views
    assert form["title"]["text"] == "Report a problem"
    body = rq.interaction_body(
        rq.view_submission(form["callback_id"], {"reason": "2", "note": "which job?"}, user=BOB)
    )
    assert await slack.send(body, rq.signed_headers(body)) == (200, "")
    await slack.command("review", user=ROOT)
    await slack.adapter.idle()
    assert any("1 report (ambiguous 1)" in c.text for c in responses_to(fake_slack, ROOT))

    await slack.command("mydata", user=BOB)
    await slack.adapter.idle()
    (opened,) = fake_slack.calls_to("conversations.open")
    assert opened.args["users"] == BOB
    (completed,) = fake_slack.calls_to("files.completeUploadExternal")
    assert completed.args["channel_id"] == f"D{BOB}"
    data = json.loads(fake_slack.uploads[completed.args["files"][0]["id"]])
    assert data["member"]["user"] == BOB and data["reports"][0]["note"] == "which job?"

    await slack.command("forget-me", user=BOB)
    await slack.adapter.idle()
    erase = action(responses_to(fake_slack, BOB), "quiz:forget:0:")
    await slack.press(erase, user=ANN)
    await slack.press(erase, user=BOB)
    await slack.adapter.idle()
    assert any("belongs to someone else" in c.text for c in responses_to(fake_slack, ANN))
    assert any("1 answer and 0 practice cards" in c.text for c in responses_to(fake_slack, BOB))
    board = await slack.service.leaderboard(CHANNEL, None)
    assert board.players == 0


async def test_a_question_file_sent_in_a_direct_message_is_imported_for_admins_only(
    slack: SlackHttp, fake_slack: FakeSlack
) -> None:
    data = f"{HEADER}\n{ROW}\n{ROW.replace(',B,', ',Z,')}\n".encode()
    assert (await slack.event(fake_slack.share_file("ours.csv", data, user=BOB)))[0] == 200
    event = fake_slack.share_file("ours.csv", data, user=ROOT)
    assert (await slack.event(event))[0] == 200
    assert (await slack.event(event))[0] == 200  # Slack's redelivery: handled once
    await slack.event(fake_slack.share_file("notes.pdf", b"%PDF", user=ROOT))
    big = fake_slack.share_file("big.csv", b"x", user=ROOT, size=50 * 1024 * 1024)
    await slack.event(big)
    await slack.adapter.idle()
    replies = [
        c.text for c in fake_slack.calls_to("chat.postMessage") if c.args["channel"] == "D0DM"
    ]
    assert len(replies) == 4, replies
    assert "Only workspace admins" in replies[0]
    assert any("I did not take notes.pdf" in t for t in replies)  # says what the DM takes
    imported = next(t for t in replies if "Question import" in t)
    assert "1 new question from 2 entries" in imported
    assert "line 3: answer: 'Z' is not a choice letter" in imported
    assert any("over the 8 MiB limit" in t for t in replies)
    files = [c for c in fake_slack.calls if c.method == "file"]
    assert len(files) == 1 and files[0].token == "xoxb-fake-bot-token"  # only the admin's, once
    pack = await slack.service.pools.team_pool(CHANNEL)
    assert len(pack) == 1


async def test_a_file_slack_will_not_hand_over_gets_a_line_that_names_the_scope(
    slack: SlackHttp, fake_slack: FakeSlack
) -> None:
    event: dict[str, Any] = fake_slack.share_file("ours.csv", b"x", user=ROOT)
    fake_slack.shared.clear()  # Slack answers with its sign-in page
    await slack.event(event)
    await slack.adapter.idle()
    (reply,) = [c for c in fake_slack.calls_to("chat.postMessage") if c.args["channel"] == "D0DM"]
    assert "could not read ours.csv" in reply.text and "files:read" in reply.text
