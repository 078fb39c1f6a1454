"""Slack's App Home end to end: the real Bolt app and slack_sdk client against the fake
Slack. Opening the Home tab publishes the member's own card (`views.publish`); answers
refresh it at most once per interval; a 429 is waited out; a stale view hash is
answered with a fresh render."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from adapters.slack.app import SlackAdapter
from adapters.slack.chat import SlackChat
from bot.app import FEATURES
from bot.clock import FakeClock
from bot.domain import ChannelRef, Platform, PostKind, UserRef
from bot.home import PRACTICE_NOW, Homes
from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.conftest import QuizWith, SlackHttp, SlackWith, make_config
from tests.adapters.slack.fake_slack import Call, FakeSlack
from tests.boards.conftest import play
from tests.quiz import asked

ALICE = UserRef(Platform.SLACK, rq.TEAM, "U0ALICE", "alice")
BOB = UserRef(Platform.SLACK, rq.TEAM, "U0BOB", "bob")
CHANNEL = ChannelRef(Platform.SLACK, rq.TEAM, rq.CHANNEL)


@pytest.fixture
async def http(slack_with: SlackWith) -> AsyncIterator[SlackHttp]:
    async with slack_with(*FEATURES) as http:
        yield http


def homes(http: SlackHttp) -> Homes:
    found = http.quiz.registry.service(Homes)
    assert found is not None
    return found


async def settle(http: SlackHttp) -> None:
    await http.adapter.idle()
    await homes(http).idle()


def publishes(http: SlackHttp, user: str, *, ok_only: bool = True) -> int:
    calls = http.fake.calls_to("views.publish", ok_only=ok_only)
    return sum(1 for c in calls if c.args["user_id"] == user)


def view_text(call: Call) -> str:
    view = call.args["view"]
    view = json.loads(view) if isinstance(view, str) else view
    return Call("views.publish", {"blocks": view.get("blocks", [])}).text


async def open_home(http: SlackHttp, user: str, **kw: str) -> None:
    status, _ = await http.event(http.fake.home_opened(user, **kw))
    assert status == 200
    await settle(http)


async def test_each_member_sees_their_own_figures(http: SlackHttp, clock: FakeClock) -> None:
    await play(http.service, CHANNEL, {ALICE: True, BOB: False})
    await play(http.service, CHANNEL, {ALICE: True, BOB: True})
    await settle(http)
    await open_home(http, "U0ALICE")
    await open_home(http, "U0BOB")
    alice, bob = http.fake.home_text("U0ALICE"), http.fake.home_text("U0BOB")
    board = await http.service.leaderboard(CHANNEL, ALICE)
    top, second = board.rows
    assert f"Rank 1 of 2 in this workspace · {top.points} points" in alice
    assert "Answered 2, correct 2 (100%)" in alice
    assert f"Rank 2 of 2 in this workspace · {second.points} points" in bob
    assert "Answered 2, correct 1 (50%)" in bob
    view, _ = http.fake.homes["U0ALICE"]
    actions = [
        e["action_id"] for b in view["blocks"] if b["type"] == "actions" for e in b["elements"]
    ]
    assert actions == [f"quiz:{PRACTICE_NOW}:0:{rq.CHANNEL}"]


async def test_an_admins_home_gains_the_settings_after_the_admin_check(
    http: SlackHttp,
) -> None:
    await play(http.service, CHANNEL, {ALICE: True, BOB: True})
    await settle(http)
    http.fake.add_user("U0ALICE", admin=True)
    await open_home(http, "U0ALICE")
    await open_home(http, "U0BOB")
    # Not known yet: a member's card first, then (an admin) again with the settings.
    first, second = [view_text(c) for c in http.fake.calls_to("views.publish")[:2]]
    assert "Settings (admins)" not in first and "Settings (admins)" in second
    assert "Settings (admins)" in http.fake.home_text("U0ALICE")
    assert f"Channel {rq.CHANNEL}: packs" in http.fake.home_text("U0ALICE")
    assert "Settings (admins)" not in http.fake.home_text("U0BOB")
    assert (publishes(http, "U0ALICE"), publishes(http, "U0BOB")) == (2, 1)
    await open_home(http, "U0ALICE")  # the answer is kept: one publish, with the section
    await open_home(http, "U0BOB")
    assert (publishes(http, "U0ALICE"), publishes(http, "U0BOB")) == (3, 2)
    assert "Settings (admins)" in view_text(http.fake.calls_to("views.publish")[-2])
    assert len(http.fake.calls_to("users.info")) == 2


async def test_the_messages_tab_publishes_nothing(http: SlackHttp) -> None:
    await open_home(http, "U0ALICE", tab="messages")
    assert publishes(http, "U0ALICE", ok_only=False) == 0


async def test_an_answer_refreshes_the_home_once_per_interval(
    http: SlackHttp, clock: FakeClock
) -> None:
    await open_home(http, "U0ALICE")
    assert publishes(http, "U0ALICE") == 1
    for _ in range(2):  # two answers within the interval: one refresh
        post = await asked(http.service, CHANNEL, kind=PostKind.SCHEDULED)
        status, _ = await http.click(post.id, 0, user="U0ALICE")
        assert status == 200
        await settle(http)
        await http.service.close(post.id)
        clock.advance(timedelta(seconds=5))
    await settle(http)
    assert publishes(http, "U0ALICE") == 2
    clock.advance(homes(http).interval)
    post = await asked(http.service, CHANNEL, kind=PostKind.SCHEDULED)
    await http.click(post.id, 1, user="U0ALICE")
    await settle(http)
    assert publishes(http, "U0ALICE") == 3


async def test_a_429_on_views_publish_is_waited_out(http: SlackHttp, sleeps: list[float]) -> None:
    http.fake.rate_limit("views.publish", retry_after=3)
    await open_home(http, "U0ALICE")
    assert publishes(http, "U0ALICE") == 1
    assert publishes(http, "U0ALICE", ok_only=False) == 2
    assert sleeps and sleeps[0] >= 3


async def test_a_stale_hash_is_published_again_with_a_fresh_render(
    http: SlackHttp, clock: FakeClock
) -> None:
    await open_home(http, "U0ALICE")
    assert "No scored answers yet" in http.fake.home_text("U0ALICE")
    http.fake.touch_home("U0ALICE")  # another replica published meanwhile
    await play(http.service, CHANNEL, {ALICE: True})  # the answer refreshes the home
    await settle(http)
    calls = list(http.fake.calls_to("views.publish", ok_only=False))
    assert [c.response.get("error") for c in calls] == [None, "hash_conflict", None]
    assert "hash" in calls[1].args and "hash" not in calls[2].args
    await open_home(http, "U0ALICE")  # the reveal made the kept card stale: read afresh
    assert "Answered 1, correct 1 (100%)" in http.fake.home_text("U0ALICE")


async def test_practice_now_in_the_home_tab_sends_a_private_question(http: SlackHttp) -> None:
    await play(http.service, CHANNEL, {ALICE: True})
    await settle(http)
    payload = rq.block_actions(0, rq.CHANNEL, user="U0ALICE", action=PRACTICE_NOW)
    del payload["channel"]
    payload["container"] = {"type": "view", "view_id": "VU0ALICE"}
    payload = copy.deepcopy(payload)
    body = rq.interaction_body(payload)
    status, _ = await http.send(body, rq.signed_headers(body))
    assert status == 200
    await settle(http)
    (sent,) = [c for c in http.fake.calls_to("chat.postEphemeral") if c.args["user"] == "U0ALICE"]
    assert sent.args["channel"] == rq.CHANNEL
    assert any(a.startswith("quiz:answer:") for a in sent.action_ids)
    assert len(await http.service.store.practice.cards(ALICE)) == 0  # asked, not answered


async def test_an_event_without_a_user_publishes_nothing(http: SlackHttp) -> None:
    body = http.fake.home_opened("U0ALICE")
    del body["event"]["user"]
    status, _ = await http.event(body)
    assert status == 200
    await settle(http)
    assert http.fake.calls_to("views.publish", ok_only=False) == []


@pytest.mark.timeout(30)
async def test_the_home_is_published_over_socket_mode(
    fake_slack: FakeSlack, slack_chat: SlackChat, quiz_with: QuizWith
) -> None:
    async with (
        quiz_with(*FEATURES) as quiz,
        SlackAdapter(quiz, slack_chat, make_config(fake_slack, socket=True)) as adapter,
    ):
        await fake_slack.wait_connected()
        env = await fake_slack.push("events_api", fake_slack.home_opened("U0ALICE"))
        await fake_slack.wait_for_ack(env)
        await fake_slack.wait_until(lambda: "U0ALICE" in fake_slack.homes)
        await adapter.idle()
        assert "Your quiz card" in fake_slack.home_text("U0ALICE")
