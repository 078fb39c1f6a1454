"""The adapter end to end against the fake Discord: start, `/quiz ask`, answer clicks
(recorded, then answered inline, private, localized, once), restarts, deferral of slow
commands, admin-only commands — over the gateway and, where marked, the HTTP endpoint."""

from __future__ import annotations

import asyncio
import copy

import discord
import pytest

from bot import basics
from bot.commands import Command, Invocation, Reply
from bot.domain import Locale, PostState
from bot.errors import StorageUnavailable
from bot.features import Feature, Parts
from bot.messages import Message
from bot.quiz import QuizService
from storage.store import SqlStore
from tests.adapters.discord.conftest import QuizWith, Runner, both_modes
from tests.adapters.discord.fake_discord import EPHEMERAL, FakeDiscord
from tests.adapters.discord.helpers import (
    ADMIN,
    answered,
    ask,
    ask_for,
    channel_of,
    click_choice,
    custom_ids,
    said,
    text_of,
)
from tests.polling import WAIT


async def test_the_gateway_connects_with_no_privileged_intent(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter() as adapter:
        assert adapter.gateway is not None
        (identify,) = fake.identifies
        assert identify["token"] == "fake-token"
        assert identify["intents"] == discord.Intents(guilds=True).value
        assert await adapter.healthy()  # what /healthz reports for Discord
    assert not await adapter.healthy()  # after the adapter closed


@both_modes
async def test_quiz_ask_posts_an_embed_with_one_button_per_choice(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore
) -> None:
    async with run_adapter():
        message, post_id = await ask(fake, "fragmentation")
        (embed,) = message["embeds"]
        assert "fragmentation" in embed["title"]
        assert "**A.**" in embed["description"] and "<t:" in embed["description"]
        assert "0 answered" in embed["footer"]["text"]
        ids = custom_ids(message)
        assert ids == [f"quiz:answer:{post_id}:{i}" for i in range(len(ids))]
        post = await store.posts.get(post_id)
        assert post is not None
        assert post.state is PostState.OPEN and post.message is not None
        assert post.message.message == message["id"]
        # The invoker's command is acknowledged privately, in the initial response.
        (callback,) = [c for c in fake.calls if c.path.endswith("/callback")]
        assert callback.json["type"] == 4 and callback.json["data"]["flags"] == EPHEMERAL


@both_modes
async def test_answer_is_recorded_then_answered_inline_in_the_users_language(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore
) -> None:
    async with run_adapter() as adapter:
        message, post_id, question = await ask_for(fake, adapter.service)
        click = await click_choice(fake, message, question.answer, user_id="7001", locale="el")
        (reply,) = await said(fake, click)
        # One initial response carrying the outcome: no deferral, no follow-up.
        (callback,) = fake.callbacks(click)
        assert callback.json["type"] == 4 and callback.json["data"]["flags"] == EPHEMERAL
        assert not fake.of("PATCH", rf"/webhooks/.*/{click['token']}/.*")
        assert "✅ Σωστό" in text_of(reply)
        assert question.text(Locale.EL).explanation[:40] in text_of(reply)
        answers = await store.answers.for_post(post_id)
        assert [(a.user.user, a.correct) for a in answers] == [("7001", True)]


async def test_unsupported_user_language_falls_back_to_the_channels(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter() as adapter:
        await adapter.service.set_locale(channel_of(fake), Locale.EL)
        message, _ = await ask(fake)
        click = await click_choice(fake, message, 0, user_id="7002", locale="de")
        (reply,) = await said(fake, click)
        assert "Σωστό" in text_of(reply) or "Όχι ακριβώς" in text_of(reply)


async def test_a_burst_of_clicks_gets_one_answer_each_and_all_are_stored(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore
) -> None:
    async with run_adapter():
        message, post_id = await ask(fake)
        ids = custom_ids(message)
        clicks = [
            fake.click_payload(message["id"], ids[i % len(ids)], user_id=str(50_000 + i))
            for i in range(40)
        ]
        for click in clicks:  # back to back: the bot reads them from one buffer
            await fake.dispatch("INTERACTION_CREATE", click)
        for click in clicks:
            (reply,) = await said(fake, click)
            assert reply["flags"] == EPHEMERAL
            assert "✅ Correct" in text_of(reply) or "❌ Not quite" in text_of(reply)
            assert len(fake.callbacks(click)) == 1
        assert [c for c in fake.calls if c.status >= 300] == []
        answers = await store.answers.for_post(post_id)
        assert len(answers) == 40


async def test_second_click_is_told_it_was_already_answered_and_not_counted(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore
) -> None:
    async with run_adapter():
        message, post_id = await ask(fake)
        await said(fake, await click_choice(fake, message, 0, user_id="7003"))
        again = await click_choice(fake, message, 1, user_id="7003")
        (reply,) = await said(fake, again)
        assert reply["flags"] == EPHEMERAL
        assert "You already answered this question (A." in text_of(reply)
        answers = await store.answers.for_post(post_id)
        assert [a.choice for a in answers] == [0]


async def test_click_on_a_question_posted_before_a_restart_is_still_answered(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore
) -> None:
    async with run_adapter():
        message, post_id = await ask(fake)
        first = custom_ids(message)[0]
        await said(fake, await fake.click(message["id"], first, user_id="7004"))
    # A new adapter on the same database: nothing about the message is in memory.
    async with run_adapter() as restarted:
        assert len(fake.identifies) == 2 and await restarted.healthy()
        new = await fake.click(message["id"], first, user_id="7005")
        (reply,) = await said(fake, new)
        assert "already answered" not in text_of(reply)
        assert "✅ Correct" in text_of(reply) or "❌ Not quite" in text_of(reply)
        repeat = await fake.click(message["id"], first, user_id="7004")
        assert "already answered" in text_of((await said(fake, repeat))[0])
    answers = await store.answers.for_post(post_id)
    assert sorted(a.user.user for a in answers) == ["7004", "7005"]


@both_modes
async def test_slow_command_defers_at_once_then_replaces_the_thinking_line(
    fake: FakeDiscord, run_adapter: Runner, quiz_with: QuizWith
) -> None:
    release = asyncio.Event()

    async def slow(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        await release.wait()  # the core is slow: the deadline passes first
        return [Reply(Message(body="slow answer")), Reply(Message(body="and more"))]

    def slow_feature(parts: Parts) -> Feature:
        return Feature("slow", commands=[Command("slow", slow, "slow", "")])

    async with (
        quiz_with(basics.feature, slow_feature) as quiz,
        run_adapter(quiz=quiz, ack_deadline=0.0) as adapter,
    ):
        inter = await fake.command("slow", user_id="7006")
        await fake.until(lambda: bool(fake.callbacks(inter)))
        (callback,) = fake.callbacks(inter)
        assert callback.json == {"type": 5, "data": {"flags": EPHEMERAL}}
        release.set()
        first, second = await said(fake, inter, 2)
        (edit,) = fake.of("PATCH", rf"/webhooks/{fake.app_id}/{inter['token']}/messages/@original")
        assert "slow answer" in text_of(edit.json) and first["flags"] == EPHEMERAL
        assert "and more" in text_of(second) and second["flags"] == EPHEMERAL
        await adapter.idle()
        assert await adapter.path.deliveries.replay_due() == 0  # marked done


async def test_click_on_a_closed_question_gets_a_clear_line(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter() as adapter:
        message, post_id = await ask(fake)
        stale = copy.deepcopy(message)  # as a client that has not seen the close yet
        first = custom_ids(message)[0]
        assert await adapter.service.close(post_id) is not None
        assert custom_ids(message) == []  # the close removed the buttons
        for shown in (stale, None):  # the button still on screen, or already gone
            click = await fake.click(message["id"], first, user_id="7007", message=shown)
            (reply,) = await said(fake, click)
            assert reply["flags"] == EPHEMERAL
            assert "This question is closed" in text_of(reply)


async def test_click_on_an_unknown_post_gets_a_clear_line(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter():
        custom_id = "quiz:answer:424242:0"
        button = {"type": 2, "style": 2, "label": "A", "custom_id": custom_id}
        stale = fake.message(fake.channel_id, {"components": [{"type": 1, "components": [button]}]})
        fake.messages[stale["id"]] = stale
        click = await fake.click(stale["id"], custom_id, user_id="7008")
        (reply,) = await said(fake, click)
        assert "not available any more" in text_of(reply)


async def test_answered_count_is_edited_into_the_question(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter() as adapter:
        message, _ = await ask(fake)
        click = await click_choice(fake, message, 0, user_id="7009")
        await said(fake, click)
        await adapter.service.drain_updates()
        (edit,) = fake.of("PATCH", rf"/channels/{fake.channel_id}/messages/{message['id']}")
        assert edit.json["embeds"][0]["footer"]["text"].startswith("1 answered")
        assert custom_ids(edit.json) == custom_ids(message)  # buttons stay while open


@both_modes
async def test_close_is_refused_without_manage_server_in_discords_words(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore
) -> None:
    async with run_adapter():
        _, post_id = await ask(fake)
        inter = await fake.command("close", user_id="7010")
        (reply,) = await said(fake, inter)
        assert reply["flags"] == EPHEMERAL
        assert "Only members with the Manage Server permission" in text_of(reply)
        post = await store.posts.get(post_id)
        assert post is not None
        assert post.state is PostState.OPEN


async def test_the_configured_admin_role_and_listed_users_may_close(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore
) -> None:
    role = 866666666666666666
    async with run_adapter(admin_role=role, admin_ids=["7099"]):
        _, post_id = await ask(fake)
        inter = await fake.command("close", user_id="7011", roles=(str(role),))
        await answered(fake, inter)
        post = await store.posts.get(post_id)
        assert post is not None
        assert post.state is PostState.CLOSED
        _, second = await ask(fake, user_id="7012")
        await answered(fake, await fake.command("close", user_id="7099"))
        stored = await store.posts.get(second)
        assert stored is not None and stored.state is PostState.CLOSED


async def test_leaderboard_is_shown_to_the_channel(fake: FakeDiscord, run_adapter: Runner) -> None:
    async with run_adapter():
        inter = await fake.command("leaderboard", {"window": "week"})
        (reply,) = await said(fake, inter)
        assert not reply.get("flags")  # public
        assert "Leaderboard" in text_of(reply)


async def test_lang_by_an_admin_switches_the_channel_to_greek(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter() as adapter:
        inter = await fake.command("lang", {"language": "el"}, permissions=ADMIN)
        (reply,) = await said(fake, inter)
        assert "Ελληνικά" in text_of(reply)
        settings = await adapter.service.store.settings.get(channel_of(fake))
        assert settings.locale is Locale.EL


@both_modes
async def test_topic_autocomplete_offers_matching_bank_topics(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter():
        inter = await fake.command("ask", {"topic": "mem"}, itype=4, focused="topic")
        await fake.until(lambda: bool(fake.callbacks(inter)))
        (callback,) = fake.callbacks(inter)
        assert callback.json["type"] == 8
        names = [c["value"] for c in callback.json["data"]["choices"]]
        assert names and all("mem" in n for n in names)
        assert names[0].startswith("mem")  # prefix matches first


async def test_sharded_client_identifies_with_the_configured_shard(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    shard = (int(fake.guild_id) >> 22) % 2
    async with run_adapter(shard_count=2, shard_ids=[shard]) as adapter:
        assert adapter.gateway is not None
        assert isinstance(adapter.gateway.client, discord.AutoShardedClient)
        (identify,) = fake.identifies
        assert identify["shard"] == [shard, 2]
        message, _ = await ask(fake)
        click = await click_choice(fake, message, 0, user_id="7013")
        assert (await said(fake, click))[0]["flags"] == EPHEMERAL


async def test_an_answer_the_database_is_slow_to_record_is_deferred_then_shown(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore
) -> None:
    # Every write is "too slow" for the reply, and the click's storing has all the time it
    # needs (0.3 s by default, what is left of Discord's 3 s, and more on a loaded machine).
    async with run_adapter(store_deadline=0.0) as adapter:
        adapter.path.late_store_deadline = WAIT
        message, post_id = await ask(fake)
        click = await click_choice(fake, message, 0, user_id="7014")
        (reply,) = await said(fake, click)
        (callback,) = fake.callbacks(click)
        assert callback.json == {"type": 5, "data": {"flags": EPHEMERAL}}  # stored, then deferred
        assert reply["flags"] == EPHEMERAL
        assert "Correct" in text_of(reply) or "Not quite" in text_of(reply)
        answers = await store.answers.for_post(post_id)
        assert [a.user.user for a in answers] == ["7014"]
        await adapter.idle()
        assert await adapter.path.deliveries.replay_due() == 0  # shown, so marked done


async def test_a_command_dispatched_twice_runs_once(fake: FakeDiscord, run_adapter: Runner) -> None:
    async with run_adapter():
        inter = fake.interaction(
            2,
            {"id": "1", "name": "quiz", "options": [{"name": "ask", "type": 1, "options": []}]},
            user_id="7015",
        )
        await fake.dispatch("INTERACTION_CREATE", inter)
        await fake.until(lambda: bool(fake.callbacks(inter)))
        await fake.dispatch("INTERACTION_CREATE", inter)  # a resumed session sends it again
        later = await fake.command("help", user_id="7015")  # read after the repeat
        await said(fake, later)
        assert len(fake.callbacks(inter)) == 1
        assert len(fake.of("POST", rf"/channels/{fake.channel_id}/messages")) == 1


@both_modes
async def test_a_click_while_the_database_is_down_is_told_to_click_again(
    fake: FakeDiscord, run_adapter: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with run_adapter() as adapter:
        message, _ = await ask(fake)

        async def down(*args: object, **kwargs: object) -> None:
            raise StorageUnavailable("the database did not answer")

        monkeypatch.setattr(adapter.service, "record_answer", down)
        click = await click_choice(fake, message, 0, user_id="7016")
        (reply,) = await said(fake, click)
        assert reply["flags"] == EPHEMERAL
        assert "could not be recorded" in text_of(reply) and "click again" in text_of(reply)
