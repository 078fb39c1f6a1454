"""HTTP mode end to end: signed requests to the real Bolt app on 127.0.0.1, the real
slack_sdk client calling a fake Slack, storage on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta

import pytest

from bot.clock import FakeClock
from bot.domain import AnswerStatus, ChannelRef, Locale, PostState
from bot.quiz import QuizService
from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.conftest import SlackHttp
from tests.adapters.slack.fake_slack import FakeSlack


def _question(service: QuizService, question_id: str):  # type: ignore[no-untyped-def]
    q = service.bank.get(question_id)
    assert q is not None
    return q


async def test_ask_posts_the_question_with_a_button_per_choice(
    http_slack: SlackHttp, slack_channel: ChannelRef
) -> None:
    status, body = await http_slack.command("ask")
    assert (status, body) == (200, "")  # acknowledged, nothing echoed in the channel
    await http_slack.adapter.idle()

    (posted,) = http_slack.fake.calls_to("chat.postMessage")
    post = await http_slack.service.open_post(slack_channel)
    assert post is not None and post.state is PostState.OPEN
    assert post.message is not None and post.message.message == posted.response["ts"]
    q = _question(http_slack.service, post.question_id)
    assert posted.args["channel"] == rq.CHANNEL
    assert posted.action_ids == [f"quiz:answer:{post.id}:{i}" for i in range(q.choice_count)]
    assert q.text(Locale.EN).prompt in posted.text
    assert "0 answered" in posted.text and "closes" in posted.text


async def test_forged_signature_and_stale_timestamp_are_refused_and_nothing_is_stored(
    http_slack: SlackHttp, slack_channel: ChannelRef
) -> None:
    post = await http_slack.ask()
    calls_before = len(http_slack.fake.calls)

    click = rq.interaction_body(rq.block_actions(post.id, 0))
    forged = rq.signed_headers(click, secret="not-the-signing-secret")
    assert (await http_slack.send(click, forged))[0] == 401
    stale = rq.signed_headers(click, timestamp=int(time.time()) - 6 * 60)
    assert (await http_slack.send(click, stale))[0] == 401
    unsigned = {"Content-Type": "application/x-www-form-urlencoded"}
    assert (await http_slack.send(click, unsigned))[0] == 401

    ask = rq.form_body(rq.slash_command("ask"))
    assert (await http_slack.send(ask, rq.signed_headers(ask, secret="forged")))[0] == 401

    await http_slack.adapter.idle()
    assert await http_slack.service.store.answers.for_post(post.id) == []
    assert await http_slack.service.store.posts.open_in_channel(slack_channel) == [post]
    assert len(http_slack.fake.calls) == calls_before  # not a single Web API call


async def test_click_is_recorded_and_the_outcome_is_shown_only_to_the_clicker(
    http_slack: SlackHttp,
) -> None:
    post = await http_slack.ask()
    q = _question(http_slack.service, post.question_id)

    status, body = await http_slack.click(post.id, q.answer)
    assert (status, body) == (200, "")
    await http_slack.adapter.idle()

    (shown,) = http_slack.private_to("U0ALICE")
    assert "✅ Correct" in shown and q.text(Locale.EN).explanation[:60] in shown
    (reply,) = http_slack.fake.calls_to("response_url")
    assert reply.args["response_type"] == "ephemeral" and reply.args["replace_original"] is False
    (answer,) = await http_slack.service.store.answers.for_post(post.id)
    assert answer.user.user == "U0ALICE" and answer.correct
    # The public message shows only the count, never who chose what.
    await http_slack.service.drain_updates()
    (update,) = http_slack.fake.calls_to("chat.update")
    assert update.args["ts"] == post.message.message  # type: ignore[union-attr]
    assert "1 answered" in update.text and "Correct" not in update.text


async def test_a_click_delivered_three_times_counts_once_and_answers_once(
    http_slack: SlackHttp,
) -> None:
    post = await http_slack.ask()
    trigger = rq.new_trigger_id()
    statuses = [
        (await http_slack.click(post.id, 2, trigger_id=trigger, retry_num=n))[0]
        for n in (None, 1, 2)
    ]
    assert statuses == [200, 200, 200]  # every delivery acknowledged: Slack stops retrying
    await http_slack.adapter.idle()

    assert len(await http_slack.service.store.answers.for_post(post.id)) == 1
    assert len(http_slack.private_to("U0ALICE")) == 1


async def test_fifty_concurrent_clicks_by_one_user_count_as_one_answer(
    http_slack: SlackHttp,
) -> None:
    post = await http_slack.ask()
    results = await asyncio.gather(*(http_slack.click(post.id, i % 4) for i in range(50)))
    assert [status for status, _ in results] == [200] * 50
    await http_slack.adapter.idle()

    (answer,) = await http_slack.service.store.answers.for_post(post.id)
    shown = http_slack.private_to("U0ALICE")
    assert len(shown) == 50
    firsts = [s for s in shown if "already answered" not in s]
    assert len(firsts) == 1  # one outcome; 49 "you already answered" naming the same choice
    letter = "ABCD"[answer.choice]
    assert all(f"({letter}." in s for s in shown if "already answered" in s)


async def test_close_reveals_in_the_thread_and_removes_the_buttons(
    http_slack: SlackHttp, fake_slack: FakeSlack, clock: FakeClock
) -> None:
    fake_slack.add_user("U0BOSS", admin=True)
    post = await http_slack.ask()
    q = _question(http_slack.service, post.question_id)
    wrong = (q.answer + 1) % q.choice_count
    await http_slack.click(post.id, wrong, user="U0BOB")
    clock.advance(timedelta(seconds=3))
    await http_slack.click(post.id, q.answer, user="U0CAROL")
    await http_slack.adapter.idle()
    await http_slack.service.drain_updates()

    assert (await http_slack.command("close", user="U0BOSS"))[0] == 200
    await http_slack.adapter.idle()

    question_ts = post.message.message  # type: ignore[union-attr]
    closed = [c for c in fake_slack.calls_to("chat.update") if c.args["ts"] == question_ts][-1]
    assert closed.action_ids == [] and "closed" in closed.text
    (reveal,) = [c for c in fake_slack.calls_to("chat.postMessage") if "thread_ts" in c.args]
    assert reveal.args["thread_ts"] == question_ts
    assert q.text(Locale.EN).choices[q.answer][:40] in reveal.text
    assert "2 answers" in reveal.text and "First correct answer: carol" in reveal.text
    stored = await http_slack.service.store.posts.get(post.id)
    assert stored is not None and stored.state is PostState.CLOSED


async def test_close_is_refused_to_members_who_are_not_admins(
    http_slack: SlackHttp, fake_slack: FakeSlack
) -> None:
    fake_slack.add_user("U0BOB")
    post = await http_slack.ask()
    await http_slack.command("close", user="U0BOB")
    await http_slack.adapter.idle()
    (refusal,) = http_slack.private_to("U0BOB")
    assert "Only workspace admins" in refusal
    assert [c.args["user"] for c in fake_slack.calls_to("users.info")] == ["U0BOB"]
    stored = await http_slack.service.store.posts.get(post.id)
    assert stored is not None and stored.state is PostState.OPEN

    # QUIZBOT_ADMINS (U0ROOT here) may, without asking Slack.
    await http_slack.command("close", user="U0ROOT")
    await http_slack.adapter.idle()
    stored = await http_slack.service.store.posts.get(post.id)
    assert stored is not None and stored.state is PostState.CLOSED
    assert len(fake_slack.calls_to("users.info")) == 1


async def test_a_rate_limited_post_is_retried_after_retry_after(
    http_slack: SlackHttp, fake_slack: FakeSlack, sleeps: list[float]
) -> None:
    fake_slack.rate_limit("chat.postMessage", retry_after=7)
    post = await http_slack.ask()

    attempts = fake_slack.calls_to("chat.postMessage", ok_only=False)
    assert [c.status for c in attempts] == [429, 200]
    assert len(sleeps) == 1 and 7 <= sleeps[0] <= 8  # Retry-After, plus under 1 s of jitter
    assert post.message is not None and post.message.message == attempts[1].response["ts"]


async def test_a_reveal_is_not_dropped_by_rate_limits(
    http_slack: SlackHttp, fake_slack: FakeSlack, sleeps: list[float]
) -> None:
    post = await http_slack.ask()
    fake_slack.rate_limit("chat.update", retry_after=2, times=3)
    fake_slack.rate_limit("chat.postMessage", retry_after=30, times=5)
    reveal = await http_slack.service.close(post.id)
    assert reveal is not None
    (thread,) = [c for c in fake_slack.calls_to("chat.postMessage") if "thread_ts" in c.args]
    assert thread.args["thread_ts"] == post.message.message  # type: ignore[union-attr]
    assert sorted(int(s) for s in sleeps) == [2, 2, 2, 30, 30, 30, 30, 30]


async def test_a_repeated_ask_delivery_posts_one_question(http_slack: SlackHttp) -> None:
    trigger = rq.new_trigger_id()
    assert (await http_slack.command("ask", trigger_id=trigger))[0] == 200
    assert (await http_slack.command("ask", trigger_id=trigger, retry_num=1))[0] == 200
    await http_slack.adapter.idle()
    assert len(http_slack.fake.calls_to("chat.postMessage")) == 1
    assert http_slack.private_to("U0ALICE") == []  # a redelivery is not a second ask


async def test_ask_has_a_per_channel_cooldown(http_slack: SlackHttp, clock: FakeClock) -> None:
    await http_slack.ask()
    clock.advance(timedelta(seconds=10))
    await http_slack.command("ask", user="U0BOB")
    await http_slack.adapter.idle()
    assert len(http_slack.fake.calls_to("chat.postMessage")) == 1
    (refusal,) = http_slack.private_to("U0BOB")
    assert "/quiz ask works again in 20 seconds" in refusal

    # Another channel is not held up, and the first one opens again after 30 s.
    await http_slack.command("ask", channel="C0OTHER")
    await http_slack.adapter.idle()
    clock.advance(timedelta(seconds=20))
    await http_slack.command("ask", user="U0BOB")
    await http_slack.adapter.idle()
    channels = [c.args["channel"] for c in http_slack.fake.calls_to("chat.postMessage")]
    assert channels == [rq.CHANNEL, "C0OTHER", rq.CHANNEL]


async def test_an_ask_with_an_unknown_topic_explains_and_starts_no_cooldown(
    http_slack: SlackHttp,
) -> None:
    await http_slack.command("ask no-such-topic")
    await http_slack.adapter.idle()
    (shown,) = http_slack.private_to("U0ALICE")
    assert "Unknown topic 'no-such-topic'" in shown
    await http_slack.ask()  # not refused by the cooldown


async def test_unknown_subcommand_gets_usage_help_privately(http_slack: SlackHttp) -> None:
    await http_slack.command("frobnicate")
    await http_slack.adapter.idle()
    (shown,) = http_slack.private_to("U0ALICE")
    assert "Unknown command 'frobnicate'" in shown and "/quiz ask [topic]" in shown
    assert http_slack.fake.calls_to("chat.postMessage") == []


async def test_clicks_on_closed_and_unknown_posts_get_a_clear_line(
    http_slack: SlackHttp,
) -> None:
    post = await http_slack.ask()
    await http_slack.service.close(post.id)
    await http_slack.click(post.id, 0, user="U0BOB")
    await http_slack.click(987654, 0, user="U0CAROL")
    await http_slack.click(post.id, "not-a-number", user="U0DAN")
    await http_slack.adapter.idle()
    assert "This question is closed" in http_slack.private_to("U0BOB")[0]
    assert "not available any more" in http_slack.private_to("U0CAROL")[0]
    assert "This question is closed" in http_slack.private_to("U0DAN")[0]
    assert await http_slack.service.store.answers.for_post(post.id) == []


@pytest.mark.parametrize("kind", ["nope", "demo"])  # no feature of this quiz registered them
async def test_a_click_of_a_kind_no_feature_registered_is_told_so_and_stores_nothing(
    http_slack: SlackHttp, kind: str
) -> None:
    post = await http_slack.ask()
    status, _ = await http_slack.press(f"quiz:{kind}:{post.id}:fragmentation", user="U0ERIN")
    assert status == 200  # acknowledged: Slack does not send it again
    await http_slack.adapter.idle()
    dropped = http_slack.service.metrics.dropped_payloads
    assert dropped.value(platform="slack", kind="foreign click") == 1
    (said,) = http_slack.private_to("U0ERIN")  # as Discord says it: the button is stale
    assert "not available any more" in said
    assert await http_slack.service.store.answers.for_post(post.id) == []


async def test_lang_changes_the_channel_language_of_outcomes(
    http_slack: SlackHttp, fake_slack: FakeSlack
) -> None:
    fake_slack.add_user("U0BOSS", owner=True)
    await http_slack.command("lang el", user="U0BOSS")
    await http_slack.adapter.idle()
    (announce,) = fake_slack.calls_to("chat.postMessage")  # a public reply
    assert "Ελληνικά" in announce.text

    post = await http_slack.ask()
    assert post.locale is Locale.EL
    q = _question(http_slack.service, post.question_id)
    await http_slack.click(post.id, q.answer)
    await http_slack.adapter.idle()
    (shown,) = http_slack.private_to("U0ALICE")
    assert q.text(Locale.EL).explanation[:40] in shown


async def test_leaderboard_is_posted_in_the_channel(http_slack: SlackHttp) -> None:
    await http_slack.command("leaderboard")
    await http_slack.adapter.idle()
    (board,) = http_slack.fake.calls_to("chat.postMessage")
    assert "Leaderboard" in board.text and board.args["channel"] == rq.CHANNEL


async def test_a_channel_the_bot_cannot_post_in_gets_an_invite_hint(
    http_slack: SlackHttp, fake_slack: FakeSlack, slack_channel: ChannelRef
) -> None:
    fake_slack.not_in.add(rq.CHANNEL)
    await http_slack.command("ask")
    await http_slack.adapter.idle()
    (shown,) = http_slack.private_to("U0ALICE")
    assert "/invite" in shown
    # The cooldown is not spent on a question nobody saw.
    fake_slack.not_in.clear()
    await http_slack.command("ask")
    await http_slack.adapter.idle()
    assert len(fake_slack.calls_to("chat.postMessage")) == 1


async def test_outcome_falls_back_to_chat_post_ephemeral_without_a_response_url(
    http_slack: SlackHttp,
) -> None:
    post = await http_slack.ask()
    payload = rq.block_actions(post.id, 0, user="U0BOB")
    del payload["response_url"]
    body = rq.interaction_body(payload)
    assert (await http_slack.send(body, rq.signed_headers(body)))[0] == 200
    await http_slack.adapter.idle()
    (ephemeral,) = http_slack.fake.calls_to("chat.postEphemeral")
    assert ephemeral.args["user"] == "U0BOB" and ephemeral.args["channel"] == rq.CHANNEL
    assert (await http_slack.service.store.answers.for_post(post.id))[0].user.user == "U0BOB"


async def test_answer_status_reaches_the_core_unchanged(http_slack: SlackHttp) -> None:
    """The adapter translates only: the core's outcome for the same click is the same."""
    post = await http_slack.ask()
    await http_slack.click(post.id, 1)
    await http_slack.adapter.idle()
    again = await http_slack.service.record_answer(
        post.id, (await http_slack.service.store.answers.for_post(post.id))[0].user, 2
    )
    assert again.outcome.status is AnswerStatus.ALREADY_ANSWERED and again.outcome.choice == 1


async def test_events_api_json_goes_through_bolt_inline(http_slack: SlackHttp) -> None:
    body = json.dumps(
        {"token": "x", "challenge": "3eZbrw1aBm2rZgRNFdxV", "type": "url_verification"}
    )
    headers = {**rq.signed_headers(body), "Content-Type": "application/json"}
    status, text = await http_slack.send(body, headers)
    assert status == 200 and "3eZbrw1aBm2rZgRNFdxV" in text
    bad = {**headers, "X-Slack-Request-Timestamp": "yesterday"}
    assert (await http_slack.send(body, bad))[0] == 401
    assert await http_slack.adapter.healthy()
