"""Reveals and images in the question's thread (or a reply without thread permission),
private messages, rate limits and lost races — real client, fake Discord."""

from __future__ import annotations

from typing import Any

from bot import basics
from bot.commands import Command, Invocation, Reply
from bot.domain import MessageRef, PostState, UserRef
from bot.features import Feature, Parts
from bot.messages import ANSWER, Button, Image, Message
from bot.quiz import QuizService
from storage.store import SqlStore
from tests.adapters.discord.conftest import QuizWith, Runner
from tests.adapters.discord.fake_discord import EPHEMERAL, FakeDiscord
from tests.adapters.discord.fake_payloads import Json
from tests.adapters.discord.helpers import (
    ADMIN,
    ask,
    ask_for,
    channel_of,
    custom_ids,
    said,
    text_of,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 2048


def ref(fake: FakeDiscord, message_id: str) -> MessageRef:
    return MessageRef(channel_of(fake), message_id)


async def asked_and_closed(fake: FakeDiscord, adapter: Any) -> Json:
    """``/quiz ask``, then the close (its reveal starts the question's thread)."""
    message, post_id = await ask(fake)
    await adapter.service.close(post_id)
    return message


async def test_reveal_goes_in_a_thread_started_from_the_question(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore
) -> None:
    async with run_adapter() as adapter:
        message, post_id, question = await ask_for(fake, adapter.service)
        right = f"quiz:answer:{post_id}:{question.answer}"
        await said(fake, await fake.click(message["id"], right, user_id="8001"))
        inter = await fake.command("close", permissions=ADMIN)
        (thread_call,) = await fake.wait_for(
            "POST", rf"/channels/{fake.channel_id}/messages/{message['id']}/threads"
        )
        assert thread_call.json["name"].startswith("Question ·")
        assert thread_call.json["auto_archive_duration"] == 1440
        # A thread started from a message has the message's id.
        (reveal,) = await fake.wait_for("POST", rf"/channels/{message['id']}/messages")
        (embed,) = reveal.json["embeds"]
        assert embed["title"] == f"Answer: {'ABCD'[question.answer]}"
        assert "1 answer:" in embed["description"]
        assert "First correct answer: user8001" in embed["description"]
        # The question lost its buttons and says it is closed.
        close_edit = fake.of("PATCH", rf"/channels/{fake.channel_id}/messages/{message['id']}")[-1]
        assert close_edit.json["components"] == []
        assert "closed" in close_edit.json["embeds"][0]["footer"]["text"]
        await fake.until(lambda: bool(fake.callbacks(inter)))
        stored = await store.posts.get(post_id)
        assert stored is not None and stored.state is PostState.CLOSED


async def test_without_thread_permission_the_reveal_is_a_reply(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    fake.fail("POST", r"/channels/\d+/messages/\d+/threads", 403, 50013)  # Missing Permissions
    async with run_adapter() as adapter:
        message, post_id = await ask(fake)
        assert await adapter.service.close(post_id) is not None
        posts = fake.of("POST", rf"/channels/{fake.channel_id}/messages")
        reply = posts[-1].json
        assert str(reply["message_reference"]["message_id"]) == message["id"]
        assert reply["embeds"][0]["title"].startswith("Answer: ")
        # Later output for the same question follows the reveal, without asking again.
        await adapter.service.chats["discord"].upload_image(
            ref(fake, message["id"]), Image("p.png", PNG)
        )
        assert len(fake.of("POST", r"/channels/\d+/messages/\d+/threads")) == 1
        (upload,) = [c for c in fake.of("POST", r"/channels/\d+/messages") if c.files]
        assert str(upload.json["message_reference"]["message_id"]) == message["id"]


async def test_image_is_uploaded_as_an_attachment_in_the_thread(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter() as adapter:
        message = await asked_and_closed(fake, adapter)
        image = Image("fragmentation.png", PNG, title="segments over time")
        await adapter.chat.upload_image(ref(fake, message["id"]), image, "Ran on: simulator")
        (upload,) = [c for c in fake.of("POST", rf"/channels/{message['id']}/messages") if c.files]
        assert upload.files == [("fragmentation.png", len(PNG))]
        assert upload.json["content"] == "Ran on: simulator"
        assert upload.json["attachments"][0]["description"] == "segments over time"


async def test_after_a_restart_the_existing_thread_is_found_again(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter() as adapter:
        message = await asked_and_closed(fake, adapter)
    async with run_adapter() as restarted:
        await restarted.chat.upload_image(ref(fake, message["id"]), Image("late.png", PNG))
        threads = fake.of("POST", rf"/channels/{fake.channel_id}/messages/{message['id']}/threads")
        assert [c.status for c in threads] == [200, 400]  # 160004: already has a thread
        (upload,) = [c for c in fake.of("POST", rf"/channels/{message['id']}/messages") if c.files]
        assert upload.status == 200


async def test_archived_thread_falls_back_to_a_reply_without_crashing(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter() as adapter:
        message = await asked_and_closed(fake, adapter)
        fake.fail("POST", rf"/channels/{message['id']}/messages", 400, 50083)  # archived
        sent = await adapter.chat.reply_in_thread(
            ref(fake, message["id"]), Message(title="Demo", body="late result")
        )
        last = fake.of("POST", rf"/channels/{fake.channel_id}/messages")[-1]
        assert str(last.json["message_reference"]["message_id"]) == message["id"]
        assert sent.message != message["id"]


async def test_question_deleted_before_the_close_still_gets_its_reveal(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter() as adapter:
        message, post_id = await ask(fake)
        del fake.messages[message["id"]]  # a moderator deleted it
        reveal = await adapter.service.close(post_id)
        assert reveal is not None
        edit = fake.of("PATCH", rf"/channels/{fake.channel_id}/messages/{message['id']}")
        assert [c.status for c in edit] == [404]  # logged, not raised
        last = fake.of("POST", rf"/channels/{fake.channel_id}/messages")[-1]
        assert last.status == 200 and last.json["embeds"][0]["title"].startswith("Answer: ")


async def test_a_429_with_via_header_is_retried(
    fake: FakeDiscord, run_adapter: Runner, store: SqlStore
) -> None:
    fake.rate_limit("POST", rf"/channels/{fake.channel_id}/messages", retry_after=0.05)
    async with run_adapter():
        message, post_id = await ask(fake)
        posts = fake.of("POST", rf"/channels/{fake.channel_id}/messages")
        assert [c.status for c in posts] == [429, 200]
        post = await store.posts.get(post_id)
        assert post is not None
        assert post.state is PostState.OPEN and post.message is not None
        assert post.message.message == message["id"]


async def test_private_message_outside_an_interaction_is_a_dm(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter() as adapter:
        user = UserRef(channel_of(fake).platform, fake.guild_id, "8002", "Eleni")
        await adapter.chat.send_private(channel_of(fake), user, Message(body="your demo is ready"))
        (dm,) = fake.of("POST", "/users/@me/channels")
        assert str(dm.json["recipient_id"]) == "8002"
        (sent,) = [c for c in fake.calls if c.path.endswith("/messages") and "ready" in str(c.json)]
        assert sent.status == 200


async def test_private_message_during_a_command_is_ephemeral_in_the_interaction(
    fake: FakeDiscord, run_adapter: Runner, quiz_with: QuizWith
) -> None:
    async def practice(service: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        # What a practice feature does: a private question with answer buttons.
        button = Button("A", ANSWER, 5, "0")
        await service.chat(inv.channel).send_private(
            inv.channel, inv.user, Message(title="Practice", body="q?", buttons=(button,))
        )
        return [Reply(Message(body="not scored"))]

    def practising(parts: Parts) -> Feature:
        return Feature("practising", commands=[Command("practice", practice, "practice", "")])

    async with quiz_with(basics.feature, practising) as quiz, run_adapter(quiz=quiz):
        inter = await fake.command("practice", user_id="8003")
        first, second = await said(fake, inter, 2)
        assert first["flags"] == EPHEMERAL and custom_ids(first) == ["quiz:answer:5:0"]
        assert second["flags"] == EPHEMERAL and "not scored" in text_of(second)
        assert not fake.of("POST", "/users/@me/channels")


async def test_an_interaction_that_cannot_be_answered_is_logged_not_raised(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    fake.fail("POST", r"/interactions/\d+/[\w-]+/callback", 404, 10062)  # expired token
    async with run_adapter() as adapter:
        inter = await fake.command("help", user_id="8005")
        await fake.until(lambda: bool(fake.of("POST", r"/interactions/.*/callback")))
        (call,) = fake.of("POST", r"/interactions/.*/callback")
        assert call.status == 404
        assert await adapter.healthy()
        # The next interaction is served as usual.
        again = await fake.command("help", user_id="8005")
        (reply,) = await said(fake, again)
        assert "Quiz commands" in text_of(reply)
        assert inter["id"] != again["id"]


async def test_a_message_in_a_thread_is_edited_there_even_after_a_restart(
    fake: FakeDiscord, run_adapter: Runner
) -> None:
    async with run_adapter() as adapter:
        message = await asked_and_closed(fake, adapter)
        status = await adapter.chat.reply_in_thread(
            ref(fake, message["id"]), Message(body="⏳ queued…")
        )
    # What the core keeps of it: the question's channel and the opaque message id.
    thread, sent = status.message.split("/")
    assert thread == message["id"] and status.channel == channel_of(fake)
    async with run_adapter() as restarted:
        await restarted.chat.update_message(status, Message(body="the report"))
        (edit,) = fake.of("PATCH", rf"/channels/{thread}/messages/{sent}")
        assert edit.status == 200 and "the report" in text_of(edit.json)
        # A reply to it goes in the same thread (threads do not nest).
        await restarted.chat.reply_in_thread(status, Message(body="more"))
        assert fake.of("POST", rf"/channels/{thread}/messages")[-1].status == 200
        assert len(fake.of("POST", r"/channels/\d+/messages/\d+/threads")) == 1
