"""The real discord.py client against the fake Discord: start, command sync, `/quiz ask`,
answer clicks (private, localized, once), restarts, deferral, admin-only commands."""

from __future__ import annotations

import asyncio
import copy

import discord

from bot.commands import Invocation, Reply, core_commands
from bot.domain import Locale, PostState
from bot.messages import Message
from bot.quiz import QuizService
from tests.adapters.discord.conftest import Runner
from tests.adapters.discord.fake_discord import EPHEMERAL, FakeDiscord
from tests.adapters.discord.helpers import (
    ADMIN,
    ask,
    channel_of,
    custom_ids,
    said,
    text_of,
)

SUBCOMMANDS = {
    "ask",
    "practice",
    "leaderboard",
    "stats",
    "lang",
    "demo",
    "help",
    "schedule",
    "close",
}


async def test_ready_and_guild_create_reach_the_client(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter() as adapter:
        guild = adapter.client.get_guild(int(fake.guild_id))
        assert guild is not None
        assert guild.get_channel(int(fake.channel_id)) is not None
        (identify,) = fake.identifies
        assert identify["token"] == "fake-token"
        assert identify["intents"] == discord.Intents(guilds=True).value  # nothing privileged
        assert await adapter.healthy()  # what /healthz reports for Discord
    assert not await adapter.healthy()  # after the adapter closed


async def test_commands_sync_to_the_dev_guild_with_greek_descriptions(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter():
        (put,) = fake.of("PUT", rf"/applications/{fake.app_id}/guilds/{fake.guild_id}/commands")
        assert not fake.of("PUT", rf"/applications/{fake.app_id}/commands")
        (quiz,) = put.json
        assert quiz["name"] == "quiz" and quiz["dm_permission"] is False
        subs = {o["name"]: o for o in quiz["options"]}
        assert set(subs) == SUBCOMMANDS
        assert all(o["type"] == 1 for o in subs.values())
        (topic,) = subs["ask"]["options"]
        assert topic["name"] == "topic" and topic["autocomplete"] and not topic["required"]
        (demo,) = subs["demo"]["options"]
        assert demo["autocomplete"] and demo["required"]
        assert {c["value"] for c in subs["lang"]["options"][0]["choices"]} == {"en", "el"}
        ask_el = subs["ask"]["description_localizations"]["el"]
        assert ask_el == "δημοσιεύει μια ερώτηση σε αυτό το κανάλι"
        assert "Διαχείριση διακομιστή" in subs["close"]["description_localizations"]["el"]


async def test_without_a_dev_guild_commands_sync_globally(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter(dev_guild=None):
        (put,) = fake.of("PUT", rf"/applications/{fake.app_id}/commands")
        assert [c["name"] for c in put.json] == ["quiz"]


async def test_quiz_ask_posts_an_embed_with_one_button_per_choice(
    fake: FakeDiscord, run_adapter: Runner, store: object
) -> None:
    async with run_adapter():
        message, post_id = await ask(fake, "fragmentation")
        (embed,) = message["embeds"]
        assert "fragmentation" in embed["title"]
        assert "**A.**" in embed["description"] and "<t:" in embed["description"]
        assert "0 answered" in embed["footer"]["text"]
        ids = custom_ids(message)
        assert ids == [f"quiz:answer:{post_id}:{i}" for i in range(len(ids))]
        post = await store.posts.get(post_id)  # type: ignore[attr-defined]
        assert post.state is PostState.OPEN and post.message.message == message["id"]
        # The invoker's command is acknowledged privately.
        (callback,) = [c for c in fake.calls if c.path.endswith("/callback")]
        assert callback.json["type"] == 4 and callback.json["data"]["flags"] == EPHEMERAL


async def test_answer_click_is_answered_privately_in_the_users_language(
    fake: FakeDiscord, run_adapter: Runner, store: object, discord_service: QuizService
) -> None:
    async with run_adapter():
        message, post_id = await ask(fake)
        post = await store.posts.get(post_id)  # type: ignore[attr-defined]
        question = discord_service.bank.get(post.question_id)
        assert question is not None
        right = f"quiz:answer:{post_id}:{question.answer}"
        click = await fake.click(message["id"], right, user_id="7001", locale="el")
        (reply,) = await said(fake, click)
        # Acknowledged at once (deferred, private), then the outcome replaces "thinking…".
        (callback,) = fake.callbacks(click)
        assert callback.json == {"type": 5, "data": {"flags": EPHEMERAL}}
        assert callback.status == 204 and not fake.of("POST", rf"/webhooks/.*/{click['token']}")
        assert reply["flags"] == EPHEMERAL
        assert "✅ Σωστό" in text_of(reply)
        assert question.text(Locale.EL).explanation[:40] in text_of(reply)
        answers = await store.answers.for_post(post_id)  # type: ignore[attr-defined]
        assert [(a.user.user, a.correct) for a in answers] == [("7001", True)]


async def test_unsupported_user_language_falls_back_to_the_channels(
    fake: FakeDiscord, run_adapter: Runner, discord_service: QuizService
) -> None:
    await discord_service.set_locale(channel_of(fake), Locale.EL)
    async with run_adapter():
        message, _ = await ask(fake)
        click = await fake.click(message["id"], custom_ids(message)[0], user_id="7002", locale="de")
        (reply,) = await said(fake, click)
        assert "Σωστό" in text_of(reply) or "Όχι ακριβώς" in text_of(reply)


async def test_second_click_is_told_it_was_already_answered_and_not_counted(
    fake: FakeDiscord, run_adapter: Runner, store: object
) -> None:
    async with run_adapter():
        message, post_id = await ask(fake)
        a, b = custom_ids(message)[:2]
        await said(fake, await fake.click(message["id"], a, user_id="7003"))
        again = await fake.click(message["id"], b, user_id="7003")
        (reply,) = await said(fake, again)
        assert reply["flags"] == EPHEMERAL
        assert "You already answered this question (A." in text_of(reply)
        answers = await store.answers.for_post(post_id)  # type: ignore[attr-defined]
        assert [a.choice for a in answers] == [0]


async def test_click_on_a_question_posted_before_a_restart_is_still_answered(
    fake: FakeDiscord, run_adapter: Runner, store: object
) -> None:
    async with run_adapter():
        message, post_id = await ask(fake)
        first = custom_ids(message)[0]
        await said(fake, await fake.click(message["id"], first, user_id="7004"))
    # A new client instance on the same database: nothing about the message is in memory.
    async with run_adapter() as restarted:
        assert len(fake.identifies) == 2 and restarted.client.is_ready()
        new = await fake.click(message["id"], first, user_id="7005")
        (reply,) = await said(fake, new)
        assert "already answered" not in text_of(reply)
        assert "✅ Correct" in text_of(reply) or "❌ Not quite" in text_of(reply)
        repeat = await fake.click(message["id"], first, user_id="7004")
        assert "already answered" in text_of((await said(fake, repeat))[0])
    answers = await store.answers.for_post(post_id)  # type: ignore[attr-defined]
    assert sorted(a.user.user for a in answers) == ["7004", "7005"]


async def test_slow_command_defers_at_once_then_replaces_the_thinking_line(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    commands = core_commands()
    release = asyncio.Event()

    async def slow(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        await release.wait()  # the core is slow: the deadline passes first
        return [Reply(Message(body="slow answer"))]

    commands.add("stats", slow, "stats")
    async with run_adapter(ack_deadline=0.0, commands=commands):
        inter = await fake.command("stats", user_id="7006")
        await fake.until(lambda: bool(fake.callbacks(inter)))
        (callback,) = fake.callbacks(inter)
        assert callback.json == {"type": 5, "data": {"flags": EPHEMERAL}}
        release.set()
        (reply,) = await said(fake, inter)
        (edit,) = fake.of("PATCH", rf"/webhooks/{fake.app_id}/{inter['token']}/messages/@original")
        assert "slow answer" in text_of(edit.json) and reply["flags"] == EPHEMERAL


async def test_click_on_a_closed_question_gets_a_clear_line(
    fake: FakeDiscord, run_adapter: Runner, discord_service: QuizService
) -> None:
    async with run_adapter():
        message, post_id = await ask(fake)
        stale = copy.deepcopy(message)  # as a client that has not seen the close yet
        first = custom_ids(message)[0]
        assert await discord_service.close(post_id) is not None
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
    fake: FakeDiscord, run_adapter: Runner, discord_service: QuizService
) -> None:
    async with run_adapter():
        message, _ = await ask(fake)
        click = await fake.click(message["id"], custom_ids(message)[0], user_id="7009")
        await said(fake, click)
        await discord_service.drain_updates()
        (edit,) = fake.of("PATCH", rf"/channels/{fake.channel_id}/messages/{message['id']}")
        assert edit.json["embeds"][0]["footer"]["text"].startswith("1 answered")
        assert custom_ids(edit.json) == custom_ids(message)  # buttons stay while open


async def test_close_is_refused_without_manage_server(
    fake: FakeDiscord, run_adapter: Runner, store: object
) -> None:
    async with run_adapter():
        _, post_id = await ask(fake)
        inter = await fake.command("close", user_id="7010")
        (reply,) = await said(fake, inter)
        assert reply["flags"] == EPHEMERAL and "Manage Server" in text_of(reply)
        post = await store.posts.get(post_id)  # type: ignore[attr-defined]
        assert post.state is PostState.OPEN


async def test_the_configured_admin_role_may_close(
    fake: FakeDiscord, run_adapter: Runner, store: object
) -> None:
    role = 866666666666666666
    fake.add_role(str(role), "quiz admins")  # no Manage Server in it
    async with run_adapter(admin_role=role):
        _, post_id = await ask(fake)
        inter = await fake.command("close", user_id="7011", roles=(str(role),))
        await fake.wait_for("POST", r"/channels/\d+/messages/\d+/threads")
        await said(fake, inter)
        post = await store.posts.get(post_id)  # type: ignore[attr-defined]
        assert post.state is PostState.CLOSED


async def test_leaderboard_is_shown_to_the_channel(fake: FakeDiscord, run_adapter: Runner) -> None:
    async with run_adapter():
        inter = await fake.command("leaderboard", {"window": "week"})
        (reply,) = await said(fake, inter)
        assert not reply.get("flags")  # public
        assert "Leaderboard" in text_of(reply)


async def test_lang_by_an_admin_switches_the_channel_to_greek(
    fake: FakeDiscord, run_adapter: Runner, discord_service: QuizService
) -> None:
    async with run_adapter():
        inter = await fake.command("lang", {"language": "el"}, permissions=ADMIN)
        (reply,) = await said(fake, inter)
        assert "Ελληνικά" in text_of(reply)
        settings = await discord_service.store.settings.get(channel_of(fake))
        assert settings.locale is Locale.EL


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
        assert isinstance(adapter.client, discord.AutoShardedClient)
        (identify,) = fake.identifies
        assert identify["shard"] == [shard, 2]
        assert adapter.client.get_guild(int(fake.guild_id)) is not None
        message, _ = await ask(fake)
        click = await fake.click(message["id"], custom_ids(message)[0], user_id="7012")
        assert (await said(fake, click))[0]["flags"] == EPHEMERAL
