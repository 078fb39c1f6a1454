"""The reveal's demo button and `/quiz demos`, and the `/quiz ask` cooldown — the core's
policies, as a Discord user meets them over the gateway and the HTTP endpoint."""

from __future__ import annotations

from bot.config import Settings
from bot.domain import DemoPolicy
from tests.adapters.discord.conftest import DemoKit, QuizWith, Runner, both_modes
from tests.adapters.discord.fake_discord import EPHEMERAL, FakeDiscord, Json
from tests.adapters.discord.helpers import (
    ADMIN,
    answered,
    ask,
    channel_of,
    custom_ids,
    said,
    text_of,
)


def in_thread(fake: FakeDiscord, message: Json) -> list[Json]:
    """The messages of the question's thread (its id is the question's id)."""
    return [m for m in fake.messages.values() if m["channel_id"] == message["id"]]


async def reveal(fake: FakeDiscord, demos: DemoKit) -> Json:
    """Ask a question that has a demo, close it as an admin: the question message."""
    message, _ = await ask(fake, "fragmentation")
    await answered(fake, await fake.command("close", permissions=ADMIN))
    await demos.dispatcher.drain()
    return message


@both_modes
async def test_the_demo_button_runs_the_questions_demo_once_in_its_thread(
    fake: FakeDiscord, run_adapter: Runner, demos: DemoKit
) -> None:
    async with run_adapter(quiz=demos.quiz):
        setting = await fake.command("demos", {"policy": "button"}, permissions=ADMIN)
        assert "now **button**" in text_of((await said(fake, setting))[0])
        message = await reveal(fake, demos)
        (offer,) = [m for m in in_thread(fake, message) if m["components"]]
        (button,) = custom_ids(offer)
        assert button.startswith("quiz:demo:") and demos.runner.jobs == []

        first = await fake.click(offer["id"], button, user_id="7401")
        (reply,) = await said(fake, first)
        assert reply["flags"] == EPHEMERAL
        assert "its result appears in the question's thread" in text_of(reply)
        await demos.dispatcher.drain()
        (job,) = demos.runner.jobs
        assert job.demo == button.rsplit(":", 1)[1]
        # The status line became the report, in the question's thread.
        assert any(f"report of {job.demo}" in text_of(m) for m in in_thread(fake, message))

        later = await fake.click(offer["id"], button, user_id="7402")
        (told,) = await said(fake, later)
        assert "already ran: its result is in the question's thread" in text_of(told)
        assert len(demos.runner.jobs) == 1


@both_modes
async def test_quiz_demos_changes_what_the_next_reveal_does(
    fake: FakeDiscord, run_adapter: Runner, demos: DemoKit
) -> None:
    async with run_adapter(quiz=demos.quiz):
        shown = await fake.command("demos")  # anyone may look
        assert "Demo policy here: **auto**" in text_of((await said(fake, shown))[0])
        refused = await fake.command("demos", {"policy": "off"})  # changing it: admins
        assert "Manage Server" in text_of((await said(fake, refused))[0])

        await said(fake, await fake.command("demos", {"policy": "off"}, permissions=ADMIN))
        settings = await demos.quiz.service.store.settings.get(channel_of(fake))
        assert settings.demo_policy is DemoPolicy.OFF
        off = await reveal(fake, demos)
        assert demos.runner.jobs == []
        assert [
            m for m in in_thread(fake, off) if m["components"] or "report of" in text_of(m)
        ] == []

        await said(fake, await fake.command("demos", {"policy": "auto"}, permissions=ADMIN))
        auto = await reveal(fake, demos)
        (job,) = demos.runner.jobs
        assert any(f"report of {job.demo}" in text_of(m) for m in in_thread(fake, auto))
        assert not any(m["components"] for m in in_thread(fake, auto))  # no button needed


@both_modes
async def test_ask_twice_within_the_cooldown_posts_one_question(
    fake: FakeDiscord, run_adapter: Runner, quiz_with: QuizWith
) -> None:
    cooldown = Settings(ask_cooldown=30)
    async with quiz_with(settings=cooldown) as quiz, run_adapter(quiz=quiz):
        await ask(fake, user_id="7403")
        second = await fake.command("ask", user_id="7404")
        (reply,) = await said(fake, second)
        assert reply["flags"] == EPHEMERAL
        assert "/quiz ask works again in 30 seconds" in text_of(reply)
        assert len(fake.of("POST", rf"/channels/{fake.channel_id}/messages")) == 1
