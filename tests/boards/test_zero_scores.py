"""Nothing scored yet reads as such: no medal for 0 points, no "leader with 0 points", no
"correct: 0%" for a question nobody answered, and a streak says what it counts."""

from __future__ import annotations

from bot.admin import EVERYONE
from bot.commands import CommandSet, Invocation, run_command
from bot.domain import ChannelRef, Locale, PostKind
from bot.quiz import QuizService
from tests.boards.conftest import play
from tests.conftest import user
from tests.fakes import RecordingChat

ALICE, BOB = user("alice"), user("bob")


async def test_when_nobody_was_right_nobody_leads_and_nobody_gets_a_medal(
    service: QuizService, channel: ChannelRef, chat: RecordingChat, commands: CommandSet
) -> None:
    await play(service, channel, {ALICE: False, BOB: False})
    reveal = chat.of("thread")[-1].message
    assert reveal is not None
    assert "Channel leader: nobody has scored yet." in reveal.body
    assert "with 0 points" not in reveal.body
    (board,) = await run_command(
        commands, service, Invocation(channel, ALICE, Locale.EN), "leaderboard"
    )
    body = board.message.body
    assert "🥇" not in body and "1. alice — 0 pts (0/1 correct)" in body, body
    await play(service, channel, {ALICE: True, BOB: False})
    (board,) = await run_command(
        commands, service, Invocation(channel, ALICE, Locale.EN), "leaderboard"
    )
    assert "🥇 alice — 10 pts" in board.message.body and "🥈" not in board.message.body


async def test_a_question_nobody_answered_is_not_answered_yet_not_zero_percent(
    service: QuizService, channel: ChannelRef, commands: CommandSet
) -> None:
    post = await play(service, channel, {})
    admin = Invocation(channel, ALICE, Locale.EN, EVERYONE)
    (reply,) = await run_command(commands, service, admin, "report")
    assert f"*{post.question_id}*" in reply.message.body
    assert "not answered yet" in reply.message.body and "0%" not in reply.message.body


async def test_a_streak_says_it_counts_scheduled_questions(
    service: QuizService, channel: ChannelRef, commands: CommandSet
) -> None:
    await play(service, channel, {ALICE: True}, kind=PostKind.ASK)
    (reply,) = await run_command(commands, service, Invocation(channel, ALICE, Locale.EN), "stats")
    assert "Streak (scheduled questions right in a row): 0 now, best 0." in reply.message.body
    assert "/quiz ask" in reply.message.body
