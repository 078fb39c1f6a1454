"""What `run_command` does with the words every platform sends: a close typo gets "did you
mean", topics and fixed values are matched whatever their case, extra arguments are
refused by name, and a missing argument is named with an example."""

from __future__ import annotations

import pytest

from bot.commands import Invocation, core_commands, run_command
from bot.domain import ChannelRef, Locale
from bot.quiz import QuizService
from tests.conftest import user
from tests.fakes import RecordingChat


async def say(service: QuizService, channel: ChannelRef, text: str) -> str:
    commands = core_commands()
    inv = Invocation(channel, user("ann"), Locale.EN, is_admin=True)
    replies = await run_command(commands, service, inv, text)
    return "\n".join(r.message.body for r in replies)


@pytest.mark.parametrize(("typo", "meant"), [("leaderbord", "leaderboard"), ("aks", "ask")])
async def test_a_close_typo_gets_did_you_mean(
    service: QuizService, channel: ChannelRef, typo: str, meant: str
) -> None:
    said = await say(service, channel, f"{typo} week")
    assert f"Unknown command '{typo}'. Did you mean /quiz {meant}?" in said


async def test_a_word_like_no_command_gets_the_list(
    service: QuizService, channel: ChannelRef
) -> None:
    said = await say(service, channel, "frobnicate")
    assert "Unknown command 'frobnicate'." in said and "Did you mean" not in said
    assert "/quiz ask [topic]" in said


async def test_a_topic_is_found_whatever_its_case(
    service: QuizService, channel: ChannelRef, chat: RecordingChat
) -> None:
    assert await say(service, channel, "ask FRAGMENTATION") == ""
    post = await service.open_post(channel)
    assert post is not None
    question = service.bank.get(post.question_id)
    assert question is not None and question.topic == "fragmentation"


async def test_a_fixed_value_is_found_whatever_its_case(
    service: QuizService, channel: ChannelRef
) -> None:
    said = await say(service, channel, "leaderboard WEEK")
    assert "Unknown" not in said and "not take" not in said, said


@pytest.mark.parametrize(
    ("text", "extra"),
    [
        ("close now", "'now'"),
        ("ask fragmentation memory", "'memory'"),
        ("help me please", "'me please'"),
    ],
)
async def test_extra_arguments_are_refused_by_name_and_nothing_runs(
    service: QuizService, channel: ChannelRef, chat: RecordingChat, text: str, extra: str
) -> None:
    said = await say(service, channel, text)
    name = text.split()[0]
    assert f"/quiz {name} does not take {extra}" in said and "Usage: /quiz" in said, said
    assert chat.of("post") == []


async def test_free_text_commands_keep_every_word(
    service: QuizService, channel: ChannelRef
) -> None:
    commands = core_commands()
    seen: list[list[str]] = []

    async def echo(svc: QuizService, inv: Invocation, args: list[str]) -> list:  # type: ignore[type-arg]
        seen.append(args)
        return []

    commands.add("echo", echo, "echo <words>")
    inv = Invocation(channel, user("ann"), Locale.EN, is_admin=True)
    await run_command(commands, service, inv, 'echo set cron "30 9 * * 1-5" UTC')
    assert seen == [["set", "cron", "30 9 * * 1-5", "UTC"]]


async def test_a_missing_argument_is_named_with_an_example(
    service: QuizService, channel: ChannelRef
) -> None:
    said = await say(service, channel, "lang")
    assert "Unknown language" not in said
    assert "/quiz lang needs the language of new questions in this channel" in said
    assert "Example: /quiz lang en" in said
