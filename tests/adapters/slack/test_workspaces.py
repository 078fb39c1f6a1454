"""Multi-workspace mode against the fake Slack: workspaces install through OAuth (bolt's
flow, our stores), every Web API call goes out with the token of the workspace it
concerns, a rotating token is refreshed once across replicas, an uninstall stops
everything for that workspace and a reinstall resumes it."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from slack_sdk.oauth.installation_store import Installation

from adapters.slack.app import SlackAdapter
from adapters.slack.chat import SlackChat
from adapters.slack.config import SlackConfig
from adapters.slack.tokens import NotInstalled, WorkspaceTokens
from bot import basics, scheduling
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import ChannelRef, Platform
from bot.features import FeatureFactory, Quiz
from bot.messages import Message
from bot.scheduling.scheduler import Scheduler
from storage.store import SqlStore
from tests.adapters.served import endpoint_served
from tests.adapters.slack import slack_requests as rq
from tests.adapters.slack.conftest import SETTINGS
from tests.adapters.slack.fake_slack import FakeSlack
from tests.quiz import quiz_of, service_of
from tests.scheduling.conftest import request, run_until

TEAMS = {"T0AAA": "C0AAA", "T0BBB": "C0BBB", "T0CCC": "C0CCC"}


@dataclass
class Multi:
    fake: FakeSlack
    adapter: SlackAdapter
    store: SqlStore
    base: str
    session: aiohttp.ClientSession
    quiz: Quiz
    cookie: str = ""
    page: str = ""

    async def command(
        self, team: str, text: str, *, user: str = "U0ALICE", extra: dict[str, str] | None = None
    ) -> int:
        form = rq.slash_command(
            text,
            user=user,
            channel=TEAMS.get(team, "C0OTHER"),
            team=team,
            response_url=self.fake.response_url(f"cmd-{team}-{user}"),
        )
        form.update(extra or {})
        body = rq.form_body(form)
        async with self.session.post(
            self.base + "/slack/events", data=body.encode(), headers=rq.signed_headers(body)
        ) as resp:
            return resp.status

    async def click(self, team: str, post_id: int, choice: int, *, user: str) -> int:
        payload = rq.block_actions(
            post_id,
            choice,
            user=user,
            channel=TEAMS[team],
            team=team,
            response_url=self.fake.response_url(f"click-{team}-{user}"),
        )
        body = rq.interaction_body(payload)
        async with self.session.post(
            self.base + "/slack/events", data=body.encode(), headers=rq.signed_headers(body)
        ) as resp:
            return resp.status

    async def event(self, team: str, event: dict[str, Any], **top: Any) -> int:
        body = {
            "token": "legacy",
            "team_id": team,
            "api_app_id": "A0FAKE",
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev{team}{event['type']}",
            "event_time": 1700000000,
            **top,
        }
        text = rq.json.dumps(body)
        headers = rq.signed_headers(text)
        headers["Content-Type"] = "application/json"
        async with self.session.post(
            self.base + "/slack/events", data=text.encode(), headers=headers
        ) as resp:
            return resp.status

    async def install(
        self,
        team: str | None,
        *,
        enterprise: str | None = None,
        rotating: bool = False,
        lang: str = "en-GB,en",
    ) -> tuple[int, str]:
        """Add to Slack, approve in (fake) Slack, follow the redirect back (a browser that
        asks for `lang`)."""
        state = await self.install_state(lang)
        channels = (TEAMS[team],) if team in TEAMS else ()
        code = self.fake.grant(team, enterprise=enterprise, rotating=rotating, channels=channels)
        return await self.redirect(lang, code=code, state=state)

    async def install_state(self, lang: str = "en-GB,en") -> str:
        """The install page's state; `self.page` keeps the page."""
        headers = {"Accept-Language": lang}
        async with self.session.get(self.base + "/slack/install", headers=headers) as resp:
            assert resp.status == 200
            page = self.page = await resp.text()
            # bolt's state cookie is Secure: a browser on https sends it back; here we do.
            self.cookie = resp.headers["Set-Cookie"].split(";", 1)[0]
        href = re.search(r"<a href=\"([^\"]+)\"", page)
        assert href is not None, page
        query = parse_qs(urlsplit(href.group(1).replace("&amp;", "&")).query)
        assert query["client_id"] == [self.fake.client_id]
        assert "chat:write" in query["scope"][0].split(",")
        return query["state"][0]

    async def redirect(self, lang: str = "en-GB,en", **query: str) -> tuple[int, str]:
        headers = {"Cookie": self.cookie, "Accept-Language": lang}
        async with self.session.get(
            self.base + "/slack/oauth_redirect", params=query, headers=headers
        ) as resp:
            return resp.status, await resp.text()

    def posts(self, channel: str) -> list[Any]:
        """The questions posted in `channel` (not the reveals in their threads)."""
        return [
            c
            for c in self.fake.calls_to("chat.postMessage")
            if c.args["channel"] == channel and "thread_ts" not in c.args
        ]


def tokens_of(store: SqlStore, clock: FakeClock, fake: FakeSlack) -> WorkspaceTokens:
    """The multi-workspace tokens of `store`, refreshed against the fake Slack's app."""
    return WorkspaceTokens(
        store.slack_installs, clock, client_id=fake.client_id, client_secret=fake.client_secret
    )


@asynccontextmanager
async def multi_slack(
    fake: FakeSlack,
    store: SqlStore,
    bank: QuestionBank,
    clock: FakeClock,
    features: tuple[FeatureFactory, ...] = (basics.feature,),
) -> AsyncIterator[Multi]:
    tokens = tokens_of(store, clock, fake)
    config = SlackConfig(
        bot_token=None,
        signing_secret=rq.SIGNING_SECRET,
        api_url=fake.api_url,
        admin_ids=frozenset({"U0ROOT"}),
        client_id=fake.client_id,
        client_secret=fake.client_secret,
        oauth_url=f"http://127.0.0.1:{fake.port}/oauth/v2/authorize",
    )
    async with (
        SlackChat(None, tokens=tokens, base_url=fake.api_url) as chat,
        quiz_of(
            store,
            {Platform.SLACK: chat},
            bank,
            clock,
            features=features,
            settings=SETTINGS,
        ) as quiz,
        SlackAdapter(
            quiz, chat, config, installs=store.slack_installs, states=store.slack_states
        ) as adapter,
        endpoint_served(adapter) as port,
        aiohttp.ClientSession() as session,
    ):
        yield Multi(fake, adapter, store, f"http://127.0.0.1:{port}", session, quiz)
        await adapter.idle()


@pytest.fixture
async def multi(
    fake_slack: FakeSlack, store: SqlStore, bank: QuestionBank, clock: FakeClock
) -> AsyncIterator[Multi]:
    async with multi_slack(fake_slack, store, bank, clock) as m:
        yield m


def token_team(fake: FakeSlack, token: str | None) -> str | None:
    return fake.team_tokens.get(token or "")


async def test_every_call_uses_the_token_of_the_workspace_it_concerns(multi: Multi) -> None:
    for team in TEAMS:
        status, page = await multi.install(team)
        assert status == 200 and "installed" in page
    # Interleaved: each workspace asks, members of every workspace answer in turn.
    for team in TEAMS:
        assert await multi.command(team, "ask") == 200
    await multi.adapter.idle()
    posts = {}
    for team, channel in TEAMS.items():
        post = await multi.adapter.service.open_post(ChannelRef(Platform.SLACK, team, channel))
        assert post is not None
        posts[team] = post.id
    for user in ("U0ALICE", "U0BOB"):
        for team in TEAMS:
            assert await multi.click(team, posts[team], 0, user=user) == 200
    for team in TEAMS:
        assert await multi.command(team, "stats", user="U0BOB") == 200
        assert await multi.command(team, "close", user="U0ROOT") == 200
    await multi.adapter.idle()
    sent = [c for c in multi.fake.calls if c.token and c.token.startswith("xoxb-")]
    assert sent, "nothing was sent"
    for call in sent:
        channel = call.args.get("channel")
        if channel in multi.fake.channel_teams:
            assert multi.fake.channel_teams[channel] == token_team(multi.fake, call.token)
    for team, channel in TEAMS.items():
        assert multi.posts(channel), f"nothing posted in {team}"
    assert multi.fake.violations == []
    answers = (
        await multi.store.answers.count_for_post(posts["T0AAA"])
        if hasattr(multi.store.answers, "count_for_post")
        else None
    )
    assert answers in (None, 2)


async def test_a_workspace_without_an_installation_gets_nothing(
    multi: Multi, caplog: pytest.LogCaptureFixture
) -> None:
    await multi.install("T0AAA")
    before = len(multi.fake.calls)
    with caplog.at_level(logging.INFO):
        assert await multi.command("T0ZZZ", "ask") == 200
        assert await multi.command("T0ZZZ", "ask") == 200
        await multi.adapter.idle()
    assert len(multi.fake.calls) == before  # nothing sent, with no token at all
    lines = [r for r in caplog.records if "T0ZZZ has no installation" in r.getMessage()]
    assert len(lines) == 1
    assert (
        await multi.adapter.service.open_post(ChannelRef(Platform.SLACK, "T0ZZZ", "C0OTHER"))
        is None
    )


async def test_bad_redirects_get_a_clear_page_and_store_nothing(
    multi: Multi, clock: FakeClock
) -> None:
    state = await multi.install_state()
    code = multi.fake.grant("T0AAA", channels=("C0AAA",))
    status, page = await multi.redirect(code=code, state="forged" + state)
    assert status == 400 and "could not be installed" in page  # not this browser's state
    status, page = await multi.redirect(error="access_denied", state=state)
    assert "cancelled" in page
    status, page = await multi.redirect(code="no-such-code", state=state)
    assert status == 401 and "Slack refused the approval" in page  # oauth.v2.access error
    status, page = await multi.redirect(code=code, state=state)
    assert status == 401 and "expired or was already used" in page  # used above
    state = await multi.install_state()
    clock.advance(timedelta(minutes=11))
    status, page = await multi.redirect(code=code, state=state)
    assert status == 401 and "expired or was already used" in page
    assert (
        await multi.store.slack_installs.async_find_bot(enterprise_id=None, team_id="T0AAA") is None
    )
    assert "<script" not in page


async def test_an_organisation_wide_install_serves_its_workspaces(multi: Multi) -> None:
    status, page = await multi.install(None, enterprise="E0ORG")
    assert status == 200, page
    org = await multi.store.slack_installs.async_find_installation(
        enterprise_id="E0ORG", team_id=None, is_enterprise_install=True
    )
    assert org is not None and org.is_enterprise_install and org.team_id is None
    multi.fake.channel_teams["C0AAA"] = "E0ORG"  # a workspace of the organisation
    assert await multi.command("T0AAA", "ask", extra={"enterprise_id": "E0ORG"}) == 200
    await multi.adapter.idle()
    (post,) = multi.posts("C0AAA")
    assert token_team(multi.fake, post.token) == "E0ORG"
    # A scheduled post later knows only the team: the organisation was remembered.
    multi.adapter.chat.tokens.forget_all()  # type: ignore[union-attr]
    await multi.adapter.chat.post_message(
        ChannelRef(Platform.SLACK, "T0AAA", "C0AAA"), Message(body="later")
    )
    assert multi.fake.violations == []


async def test_uninstall_stops_one_workspace_and_a_reinstall_resumes_it(
    multi: Multi, clock: FakeClock
) -> None:
    await multi.install("T0AAA")
    await multi.install("T0BBB")
    for team in ("T0AAA", "T0BBB"):
        assert await multi.command(team, "ask") == 200
    await multi.adapter.idle()
    assert len(multi.posts("C0AAA")) == len(multi.posts("C0BBB")) == 1
    assert await multi.event("T0AAA", {"type": "app_uninstalled"}) == 200
    multi.fake.revoke("T0AAA")
    assert await multi.store.slack_installs.uninstalled("T0AAA")
    clock.advance(timedelta(minutes=1))  # past the ask cooldown
    for team in ("T0AAA", "T0BBB"):
        assert await multi.command(team, "close", user="U0ROOT") == 200
        assert await multi.command(team, "ask") == 200
    await multi.adapter.idle()
    with pytest.raises(NotInstalled):  # a scheduled post, a reveal: nothing goes out
        await multi.adapter.chat.post_message(
            ChannelRef(Platform.SLACK, "T0AAA", "C0AAA"), Message(body="x")
        )
    assert len(multi.posts("C0AAA")) == 1  # nothing more for the uninstalled workspace
    assert len(multi.posts("C0BBB")) == 2  # the other keeps running
    status, _ = await multi.install("T0AAA")
    assert status == 200
    clock.advance(timedelta(minutes=1))
    assert await multi.command("T0AAA", "close", user="U0ROOT") == 200
    assert await multi.command("T0AAA", "ask") == 200
    await multi.adapter.idle()
    assert len(multi.posts("C0AAA")) == 2  # resumed
    assert multi.fake.violations == []


async def test_revoked_bot_tokens_are_deleted_at_once(multi: Multi) -> None:
    await multi.install("T0AAA")
    event = {"type": "tokens_revoked", "tokens": {"oauth": [], "bot": ["UQUIZBOT"]}}
    assert await multi.event("T0AAA", event) == 200
    assert await multi.store.slack_installs.bot_token("T0AAA") is None


async def test_two_replicas_refresh_a_rotating_token_once(
    fake_slack: FakeSlack, store: SqlStore, db_url: str, clock: FakeClock
) -> None:
    issued = fake_slack._issue("T0AAA", rotating=True)
    fake_slack.channel_teams["C0AAA"] = "T0AAA"
    await store.slack_installs.async_save(
        Installation(
            team_id="T0AAA",
            bot_token=issued["access_token"],
            bot_refresh_token=issued["refresh_token"],
            bot_token_expires_at=int((clock.now() + timedelta(minutes=5)).timestamp()),
            user_id="UINSTALLER",
        )
    )
    async with (
        SqlStore(db_url, clock=clock) as other,
        SlackChat(
            None,
            tokens=tokens_of(store, clock, fake_slack),
            base_url=fake_slack.api_url,
        ) as one,
        SlackChat(
            None,
            tokens=tokens_of(other, clock, fake_slack),
            base_url=fake_slack.api_url,
        ) as two,
    ):
        channel = ChannelRef(Platform.SLACK, "T0AAA", "C0AAA")
        await asyncio.gather(
            *(
                chat.post_message(channel, Message(body=f"{i}"))
                for i in range(3)
                for chat in (one, two)
            )
        )
    assert fake_slack.refreshed == ["T0AAA"]  # one refresh: no refresh token spent twice
    refreshes = fake_slack.calls_to("oauth.v2.access", ok_only=False)
    assert len(refreshes) == 1 and refreshes[0].ok
    posts = fake_slack.calls_to("chat.postMessage")
    assert len(posts) == 6
    fresh = await store.slack_installs.bot_token("T0AAA")
    assert fresh is not None and fresh.token != issued["access_token"]
    assert fresh.expires_at == clock.now() + timedelta(seconds=fake_slack.expires_in)


async def test_an_uninstalled_workspaces_schedules_pause_and_a_reinstall_resumes_them(
    fake_slack: FakeSlack, store: SqlStore, bank: QuestionBank, clock: FakeClock
) -> None:
    features = (basics.feature, scheduling.feature)
    async with multi_slack(fake_slack, store, bank, clock, features) as multi:
        scheduler = service_of(multi.quiz, Scheduler)
        for team in ("T0AAA", "T0BBB"):
            await multi.install(team)
            channel = ChannelRef(Platform.SLACK, team, TEAMS[team])
            await scheduler.add(channel, request("09:30 UTC", clock.now()), "U0ROOT")
        day = timedelta(days=1)
        await run_until(clock, [scheduler], clock.now() + day)
        assert len(multi.posts("C0AAA")) == len(multi.posts("C0BBB")) == 1
        assert await multi.event("T0AAA", {"type": "app_uninstalled"}) == 200
        multi.fake.revoke("T0AAA")
        await run_until(clock, [scheduler], clock.now() + 2 * day)
        assert len(multi.posts("C0AAA")) == 1  # paused: nothing posted, not even tried
        assert not [c for c in multi.fake.calls if c.args.get("channel") == "C0AAA" and not c.ok]
        assert len(multi.posts("C0BBB")) == 3
        await multi.install("T0AAA")
        await run_until(clock, [scheduler], clock.now() + day)
        assert len(multi.posts("C0AAA")) == 2  # resumed at its next slot, no backlog
        assert multi.fake.violations == []


async def test_each_members_home_tab_is_published_with_their_workspaces_token(
    fake_slack: FakeSlack, store: SqlStore, bank: QuestionBank, clock: FakeClock
) -> None:
    from bot import home

    async with multi_slack(fake_slack, store, bank, clock, (basics.feature, home.feature)) as m:
        for team in ("T0AAA", "T0BBB"):
            await m.install(team)
        for team, user in (("T0AAA", "U0ANN"), ("T0BBB", "U0BEN")):
            body = m.fake.home_opened(user)
            body["team_id"] = team
            assert await m.event(team, body["event"], event_id=f"Ev{team}home") == 200
        await m.adapter.idle()
        published = m.fake.calls_to("views.publish")
        assert sorted((c.args["user_id"], token_team(m.fake, c.token)) for c in published) == [
            ("U0ANN", "T0AAA"),
            ("U0BEN", "T0BBB"),
        ]


@pytest.mark.parametrize("error", ["token_revoked", "invalid_auth"])
async def test_a_token_revoked_mid_burst_stops_only_its_workspace(
    multi: Multi, caplog: pytest.LogCaptureFixture, error: str
) -> None:
    teams = ("T0AAA", "T0BBB")
    for team in teams:
        await multi.install(team)
        assert await multi.command(team, "ask") == 200
    await multi.adapter.idle()
    posts = {}
    for team in teams:
        post = await multi.adapter.service.open_post(ChannelRef(Platform.SLACK, team, TEAMS[team]))
        assert post is not None
        posts[team] = post.id
    users = [f"U{n:04d}" for n in range(40)]

    async def wave(who: list[str]) -> list[int]:
        # Interleaved: the members of both workspaces click at once.
        return await asyncio.gather(
            *(
                multi.click(team, posts[team], n % 4, user=u)
                for n, u in enumerate(who)
                for team in teams
            )
        )

    with caplog.at_level(logging.INFO):
        first = await wave(users[:20])
        # Part-way through (the first wave's count edits still going out): Slack stops
        # taking T0AAA's token, before any event about it reaches the bot.
        revoked_at = len(multi.fake.calls)
        multi.fake.revoke("T0AAA", error)
        second = await wave(users[20:])
        await multi.adapter.idle()
        await multi.adapter.service.drain_updates()
    assert first + second == [200] * 80  # every click acknowledged
    for team in teams:  # and every answer stored, in both workspaces
        answers = await multi.store.answers.for_post(posts[team])
        assert sorted(a.user.user for a in answers) == users
    assert multi.fake.violations == []  # nothing sent with another workspace's token
    later = multi.fake.calls[revoked_at:]
    refused = [c for c in later if c.token and not c.ok]
    assert refused, "nothing was tried with the revoked token"
    assert {token_team_of(multi.fake, c.token) for c in refused} == {"T0AAA"}
    assert {c.response.get("error") for c in refused if c.response} == {error}
    assert all(c.args.get("channel") == "C0AAA" for c in refused)
    # The other workspace is unaffected: its count edits kept going out, with its token.
    edits_b = [c for c in later if c.method == "chat.update" and c.args.get("channel") == "C0BBB"]
    assert edits_b and all(c.ok and token_team(multi.fake, c.token) == "T0BBB" for c in edits_b)
    lines = [r.getMessage() for r in caplog.records if "refused the bot token" in r.getMessage()]
    assert lines and all("T0AAA" in line and error in line for line in lines)
    # Private outcomes need no token: every clicker heard back, the revoked workspace's too.
    assert len(multi.fake.calls_to("response_url")) == 80


def token_team_of(fake: FakeSlack, token: str | None) -> str | None:
    """The team a token was issued to, revoked since or not."""
    if token in fake.refused_tokens:
        return str(token).split("-")[1]
    return token_team(fake, token)


async def test_a_greek_browser_installs_in_greek(multi: Multi) -> None:
    """The install page, a refusal and the installed page in the browser's language."""
    state = await multi.install_state("el-GR,el;q=0.9,en;q=0.5")
    assert "<html lang='el'>" in multi.page and ">Προσθήκη στο Slack</a>" in multi.page
    status, page = await multi.redirect("el", error="access_denied", state=state)
    assert "Η εγκατάσταση ακυρώθηκε στο Slack." in page and "Ξεκινήστε ξανά" in page
    status, page = await multi.install("T0AAA", lang="el")
    assert status == 200 and "Το quizbot εγκαταστάθηκε" in page and "/quiz help" in page
    status, page = await multi.install("T0BBB", lang="fr-FR, de")  # neither: English
    assert status == 200 and "quizbot is installed" in page


async def test_two_workspaces_play_see_their_own_homes_and_one_leaves_and_comes_back(
    fake_slack: FakeSlack, store: SqlStore, bank: QuestionBank, clock: FakeClock
) -> None:
    """The issue's whole story: two workspaces install and each runs a round; each
    member's App Home shows their own workspace's figures; one uninstalls and gets
    nothing more (no question, no home) while the other keeps running; it reinstalls and
    resumes. No call ever goes out with the other workspace's token."""
    from bot import home

    players = {"T0AAA": ("U0ANN", "U0AMY"), "T0BBB": ("U0BEN",)}
    async with multi_slack(fake_slack, store, bank, clock, (basics.feature, home.feature)) as m:
        for team in players:
            assert (await m.install(team))[0] == 200
            assert await m.command(team, "ask") == 200
        await m.adapter.idle()
        for team, users in players.items():
            post = await m.adapter.service.open_post(ChannelRef(Platform.SLACK, team, TEAMS[team]))
            assert post is not None
            question = m.adapter.service.bank.get(post.question_id)
            assert question is not None
            wrong = (question.answer + 1) % question.choice_count
            for user, choice in zip(users, (question.answer, wrong), strict=False):
                assert await m.click(team, post.id, choice, user=user) == 200
            assert await m.command(team, "close", user="U0ROOT") == 200
        await m.adapter.idle()

        async def home_of(team: str, user: str, n: int) -> str:
            body = m.fake.home_opened(user)
            body["team_id"] = team
            assert await m.event(team, body["event"], event_id=f"Ev{team}{user}{n}") == 200
            await m.adapter.idle()
            return rq.json.dumps(m.fake.homes[user][0], ensure_ascii=False)

        ann, amy, ben = (
            await home_of("T0AAA", "U0ANN", 1),
            await home_of("T0AAA", "U0AMY", 1),
            await home_of("T0BBB", "U0BEN", 1),
        )
        assert "Rank 1 of 2 in this workspace" in ann and "correct 1 (100%)" in ann
        assert "Rank 2 of 2 in this workspace" in amy and "correct 0 (0%)" in amy
        assert "Rank 1 of 1 in this workspace" in ben
        published = len(m.fake.calls_to("views.publish"))

        assert await m.event("T0AAA", {"type": "app_uninstalled"}) == 200
        m.fake.revoke("T0AAA")
        clock.advance(timedelta(minutes=1))  # past the ask cooldown
        for team in players:
            assert await m.command(team, "ask") == 200
        body = m.fake.home_opened("U0ANN")
        body["team_id"] = "T0AAA"
        assert await m.event("T0AAA", body["event"], event_id="EvT0AAAgone") == 200
        await m.adapter.idle()
        assert len(m.posts("C0AAA")) == 1  # nothing more for the uninstalled workspace
        assert len(m.posts("C0BBB")) == 2  # the other keeps running
        assert len(m.fake.calls_to("views.publish")) == published  # no home either

        assert (await m.install("T0AAA"))[0] == 200
        clock.advance(timedelta(minutes=1))
        assert await m.command("T0AAA", "ask") == 200
        await m.adapter.idle()
        assert len(m.posts("C0AAA")) == 2  # resumed
        assert "Rank 1 of 2 in this workspace" in await home_of("T0AAA", "U0ANN", 2)
        assert m.fake.violations == []
