"""What `run_command` does with the words every platform sends: a close typo gets "did you
mean", topics and fixed values are matched whatever their case, extra arguments are
refused by name, and a missing argument is named with an example."""

from __future__ import annotations

import pytest

from bot.admin import EVERYONE
from bot.commands import Command, Invocation, Reply, run_command
from bot.domain import ChannelRef, Locale
from bot.features import Quiz
from bot.quiz import QuizService
from tests.conftest import user
from tests.fakes import RecordingChat


@pytest.fixture
def quiz(basic: Quiz) -> Quiz:
    return basic


async def say(quiz: Quiz, channel: ChannelRef, text: str) -> str:
    inv = Invocation(channel, user("ann"), Locale.EN, EVERYONE)
    replies = await run_command(quiz.commands, quiz.service, inv, text)
    return "\n".join(r.message.body for r in replies)


@pytest.mark.parametrize(("typo", "meant"), [("leaderbord", "leaderboard"), ("aks", "ask")])
async def test_a_close_typo_gets_did_you_mean(
    quiz: Quiz, channel: ChannelRef, typo: str, meant: str
) -> None:
    said = await say(quiz, channel, f"{typo} week")
    assert f"Unknown command '{typo}'. Did you mean /quiz {meant}?" in said


async def test_a_word_like_no_command_gets_the_list(quiz: Quiz, channel: ChannelRef) -> None:
    said = await say(quiz, channel, "frobnicate")
    assert "Unknown command 'frobnicate'." in said and "Did you mean" not in said
    assert "/quiz ask [topic]" in said


async def test_a_topic_is_found_whatever_its_case(
    quiz: Quiz, channel: ChannelRef, chat: RecordingChat
) -> None:
    assert await say(quiz, channel, "ask FRAGMENTATION") == ""
    post = await quiz.service.open_post(channel)
    assert post is not None
    question = quiz.service.bank.get(post.question_id)
    assert question is not None and question.topic == "fragmentation"


async def test_a_fixed_value_is_found_whatever_its_case(quiz: Quiz, channel: ChannelRef) -> None:
    said = await say(quiz, channel, "leaderboard WEEK")
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
    quiz: Quiz, channel: ChannelRef, chat: RecordingChat, text: str, extra: str
) -> None:
    said = await say(quiz, channel, text)
    name = text.split()[0]
    assert f"/quiz {name} does not take {extra}" in said and "Usage: /quiz" in said, said
    assert chat.of("post") == []


async def test_free_text_commands_keep_every_word(quiz: Quiz, channel: ChannelRef) -> None:
    seen: list[list[str]] = []

    async def echo(svc: QuizService, inv: Invocation, args: list[str]) -> list[Reply]:
        seen.append(args)
        return []

    quiz.commands.add(Command("echo", echo, "echo <words>", "repeat"))
    inv = Invocation(channel, user("ann"), Locale.EN, EVERYONE)
    await run_command(quiz.commands, quiz.service, inv, 'echo set cron "30 9 * * 1-5" UTC')
    assert seen == [["set", "cron", "30 9 * * 1-5", "UTC"]]


async def test_a_missing_argument_is_named_with_an_example(quiz: Quiz, channel: ChannelRef) -> None:
    said = await say(quiz, channel, "lang")
    assert "Unknown language" not in said
    assert "/quiz lang needs the language of new questions in this channel" in said
    assert "Example: /quiz lang en" in said
