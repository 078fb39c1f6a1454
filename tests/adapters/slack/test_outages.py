"""Slack answering errors on each Web API method the adapter uses — 500 with an HTML page,
405 with text, 429 beyond the retry budget — with the real slack_sdk client and the fake
Slack: nothing acknowledged is lost, a user is told something true, and an `ask` whose
post failed is posted once, later, never twice."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from bot import basics, scheduling
from bot.clock import FakeClock
from bot.domain import ChannelRef, Platform
from bot.scheduling import Scheduler
from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.conftest import SlackHttp, SlackWith
from tests.adapters.slack.fake_slack import FakeSlack
from tests.quiz import service_of

HTML_500 = "<html><head><title>500</title></head><body>Internal Server Error</body></html>"
CHANNEL = ChannelRef(Platform.SLACK, rq.TEAM, rq.CHANNEL)


@pytest.fixture
async def http_slack(slack_with: SlackWith) -> AsyncIterator[SlackHttp]:
    """With scheduled questions: the scheduler's reconciler resends what a failed post
    left claimed and retries failed reveals (as `serve` runs it; wake-ups off: the tests
    reconcile)."""
    async with slack_with(basics.feature, scheduling.feature) as http:
        yield http


def scheduler_of(http: SlackHttp) -> Scheduler:
    return service_of(http.quiz, Scheduler)


@pytest.mark.parametrize(
    ("status", "body", "content_type"),
    [
        (500, HTML_500, "text/html"),
        (503, "", "text/plain"),
        (405, "Method Not Allowed", "text/plain"),
    ],
)
async def test_an_ask_whose_post_fails_is_posted_once_when_slack_recovers(
    http_slack: SlackHttp,
    fake_slack: FakeSlack,
    clock: FakeClock,
    status: int,
    body: str,
    content_type: str,
) -> None:
    fake_slack.outage("chat.postMessage", status, body, content_type)
    await http_slack.command("ask", user="U0ANN")
    await http_slack.adapter.idle()
    (first,) = http_slack.private_to("U0ANN")
    assert "will be posted here as soon as it does" in first
    assert "try again" not in first.lower()

    clock.advance(timedelta(seconds=45))  # past the cooldown: a second member asks
    await http_slack.command("ask", user="U0BOB")
    await http_slack.adapter.idle()
    (second,) = http_slack.private_to("U0BOB")
    assert "already waiting to be posted" in second

    fake_slack.restore("chat.postMessage")
    service = http_slack.service
    scheduler = scheduler_of(http_slack)
    for _ in range(3):
        clock.advance(timedelta(minutes=3))
        await scheduler.reconcile()
    posted = [c for c in fake_slack.calls_to("chat.postMessage") if c.action_ids]
    assert len(posted) == 1  # one question, posted once Slack answered
    assert await service.open_post(CHANNEL) is not None


async def test_a_rate_limit_beyond_the_budget_is_deferred_like_an_outage(
    http_slack: SlackHttp, fake_slack: FakeSlack
) -> None:
    fake_slack.rate_limit("chat.postMessage", retry_after=1, times=100)
    await http_slack.command("ask", user="U0ANN")
    await http_slack.adapter.idle()
    (shown,) = http_slack.private_to("U0ANN")
    assert "will be posted here as soon as it does" in shown


async def test_with_users_info_down_an_admin_listed_in_quizbot_admins_still_closes(
    http_slack: SlackHttp, fake_slack: FakeSlack
) -> None:
    post = await http_slack.ask()
    fake_slack.add_user("U0BOSS", owner=True)
    fake_slack.outage("users.info", 500, HTML_500, "text/html")
    await http_slack.command("close", user="U0BOSS")
    await http_slack.adapter.idle()
    (shown,) = http_slack.private_to("U0BOSS")
    assert "could not check whether you are an admin" in shown
    assert "Only workspace admins" not in shown  # not a false "you are not an admin"
    assert (await http_slack.service.store.posts.get(post.id)).state.value == "open"  # type: ignore[union-attr]

    await http_slack.command("close", user="U0ROOT")  # QUIZBOT_ADMINS, no users.info needed
    await http_slack.adapter.idle()
    assert (await http_slack.service.store.posts.get(post.id)).state.value == "closed"  # type: ignore[union-attr]


async def test_a_failing_response_url_falls_back_and_the_answer_is_kept(
    http_slack: SlackHttp, fake_slack: FakeSlack
) -> None:
    post = await http_slack.ask()
    fake_slack.outage("response_url", 500, HTML_500, "text/html")
    await http_slack.click(post.id, 1, user="U0ANN")
    await http_slack.adapter.idle()
    (ephemeral,) = fake_slack.calls_to("chat.postEphemeral")
    assert ephemeral.args["user"] == "U0ANN"
    # Both ways down: the answer is still stored; the user can click again to see it.
    fake_slack.outage("chat.postEphemeral", 500, HTML_500, "text/html")
    await http_slack.click(post.id, 2, user="U0BOB")
    await http_slack.adapter.idle()
    answers = await http_slack.service.store.answers.for_post(post.id)
    assert sorted(a.user.user for a in answers) == ["U0ANN", "U0BOB"]


async def test_failing_count_edits_and_reveal_edits_lose_nothing(
    http_slack: SlackHttp, fake_slack: FakeSlack, clock: FakeClock
) -> None:
    post = await http_slack.ask()
    fake_slack.outage("chat.update", 500, HTML_500, "text/html")
    await http_slack.click(post.id, 1, user="U0ANN")
    await http_slack.adapter.idle()
    await http_slack.service.drain_updates()
    assert len(await http_slack.service.store.answers.for_post(post.id)) == 1
    reveal = await http_slack.service.close(post.id)  # its edit fails: retried later
    assert reveal is not None
    fake_slack.restore("chat.update")
    clock.advance(timedelta(minutes=5))
    report = await scheduler_of(http_slack).reconcile()
    assert report.reveals_retried == 1
    threads = [c for c in fake_slack.calls_to("chat.postMessage") if "thread_ts" in c.args]
    assert len(threads) == 1
