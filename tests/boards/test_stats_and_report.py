"""Personal stats (private, per topic, weakest topic) and the admin question report."""

from __future__ import annotations

import asyncio
import csv
import io
import shutil
from pathlib import Path

import pytest

from bot.admin import EVERYONE
from bot.bank import QuestionBank
from bot.cli import build_parser
from bot.clock import FakeClock
from bot.commands import CommandSet, Invocation, run_command
from bot.domain import BoardScope, ChannelRef, Locale, Platform, PostKind
from bot.errors import UserFacingError
from bot.quiz import QuizService
from bot.report import QuestionReport, report_csv, report_text
from storage.store import SqlStore
from tests.boards.conftest import play
from tests.conftest import user
from tests.fakes import RecordingChat
from tests.quiz import quiz_of

ALICE, BOB, CAROL = user("alice"), user("bob"), user("carol")
ROOT = Path(__file__).resolve().parents[2]


async def test_stats_show_streaks_accuracy_per_topic_and_suggest_the_weakest(
    service: QuizService, channel: ChannelRef, commands: CommandSet
) -> None:
    strong, weak = service.bank.topics()[:2]
    await play(service, channel, {ALICE: True}, topic=strong)
    await play(service, channel, {ALICE: True}, topic=strong)
    await play(service, channel, {ALICE: False}, topic=weak)
    await play(service, channel, {ALICE: True}, topic=weak, kind=PostKind.ASK)
    await play(service, channel, {BOB: True})

    inv = Invocation(channel, ALICE, Locale.EN)
    (reply,) = await run_command(commands, service, inv, "stats")
    assert reply.private
    body = reply.message.body
    assert "Answered 4, correct 3 (75%), 31 points, rank 1 of 2." in body
    assert "Streak: 0 in a row now, best 2." in body
    assert f"- {weak}: 1/2 (50%)" in body and f"- {strong}: 2/2 (100%)" in body
    assert body.index(weak) < body.index(strong)  # weakest first
    assert f"Weakest topic: {weak} (50%)" in body and f"/quiz practice {weak}" in body

    (none,) = await run_command(commands, service, Invocation(channel, CAROL, Locale.EN), "stats")
    assert "no answers in this channel yet" in none.message.body
    (perfect,) = await run_command(commands, service, Invocation(channel, BOB, Locale.EN), "stats")
    assert "No weak topic so far" in perfect.message.body


async def test_stats_in_greek(
    service: QuizService, channel: ChannelRef, commands: CommandSet
) -> None:
    await play(service, channel, {ALICE: False})
    (reply,) = await run_command(commands, service, Invocation(channel, ALICE, Locale.EL), "stats")
    assert "Σερί" in reply.message.body and "Πιο αδύναμο θέμα" in reply.message.body


async def test_report_counts_asked_answers_correct_and_the_most_chosen_wrong_choice(
    service: QuizService, channel: ChannelRef, commands: CommandSet
) -> None:
    other = ChannelRef(Platform.SLACK, "T1", "C2")
    topic = service.bank.topics()[0]
    first = await play(service, channel, {}, topic=topic, close=False)
    q = service.bank.get(first.question_id)
    assert q is not None
    wrong = (q.answer + 1) % q.choice_count
    for who, choice in ((ALICE, q.answer), (BOB, wrong), (CAROL, wrong)):
        await service.record_answer(first.id, who, choice)
    await service.close(first.id)
    await play(service, other, {ALICE: True, BOB: True})
    # Practice is left out of the report.
    (practice,) = await run_command(
        commands, service, Invocation(channel, BOB, Locale.EN), "practice"
    )
    button = practice.message.buttons[0]
    await service.record_answer(button.post_id, BOB, int(button.value))

    rows = await service.store.reports.questions(channel, BoardScope.CHANNEL, Locale.EN)  # type: ignore[attr-defined]
    assert rows == [
        QuestionReport(q.id, q.topic, 1, 3, 1, wrong, 2, q.text(Locale.EN).choices[wrong])
    ]
    assert rows[0].percent_correct == 33
    workspace = await service.store.reports.questions(channel, BoardScope.WORKSPACE, Locale.EN)  # type: ignore[attr-defined]
    assert sum(r.asked for r in workspace) == 2 and sum(r.answers for r in workspace) == 5

    admin = Invocation(channel, ALICE, Locale.EN, EVERYONE)
    (reply,) = await run_command(commands, service, admin, "report")
    assert reply.private and reply.message.title == "Question report · this channel"
    assert f"*{q.id}* ({q.topic}): asked 1×, 3 answers, correct: 33%" in reply.message.body
    letter = "ABCD"[wrong]
    assert f"most chosen wrong answer: {letter}. {q.text(Locale.EN).choices[wrong]} (2)" in (
        reply.message.body
    )
    (denied,) = await run_command(commands, service, Invocation(channel, BOB, Locale.EN), "report")
    assert "Only workspace admins" in denied.message.body


def test_report_csv_cells_from_members_never_start_a_formula() -> None:
    rows = [
        QuestionReport("team-1", "t", 1, 4, 1, 2, 3, '=HYPERLINK("https://evil.example")'),
        QuestionReport("team-2", "t", 1, 4, 1, 0, 2, "-1"),
        QuestionReport("team-3", "@topic", 1, 4, 1, 1, 1, "+cmd|' /C calc'!A0"),
    ]
    parsed = list(csv.reader(io.StringIO(report_csv(rows))))
    cells = [cell for row in parsed for cell in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert sorted(row[7] for row in parsed[1:]) == [
        "'+cmd|' /C calc'!A0",
        "'-1",
        '\'=HYPERLINK("https://evil.example")',
    ]
    assert parsed[1][3] == "4"  # numbers are written as numbers


def test_report_csv_and_text_list_hardest_first() -> None:
    rows = [
        QuestionReport("easy", "t", 2, 10, 9, 1, 1, 'no, it\'s "fine"'),
        QuestionReport("hard", "t", 1, 4, 1, 2, 3, "a, b"),
        QuestionReport("unanswered", "t", 1, 0, 0),
    ]
    parsed = list(csv.reader(io.StringIO(report_csv(rows))))
    assert parsed[0][:4] == ["question_id", "topic", "times_asked", "answers"]
    assert [r[0] for r in parsed[1:]] == ["hard", "easy", "unanswered"]
    assert parsed[1][5:] == ["25", "C", "a, b", "3", "0"]
    assert parsed[2][7] == 'no, it\'s "fine"'
    text = report_text(rows).splitlines()
    assert text[0].split() == [
        "question",
        "topic",
        "asked",
        "answers",
        "correct",
        "reports",
        "most",
        "chosen",
        "wrong",
    ]
    assert text[1].startswith("hard") and "C. a, b (3)" in text[1]


def test_quizbot_report_command_line_prints_csv_or_text(
    sqlite_template: Path,
    tmp_path: Path,
    bank: QuestionBank,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'report.db'}"
    shutil.copy(sqlite_template, tmp_path / "report.db")

    async def seed() -> None:
        async with SqlStore(url, clock=FakeClock()) as store:
            chats = {Platform.SLACK: RecordingChat()}
            async with quiz_of(store, chats, bank, store.clock, features=[]) as quiz:
                channel = ChannelRef(Platform.SLACK, "T1", "C1")
                await play(quiz.service, channel, {ALICE: True, BOB: False})

    asyncio.run(seed())
    monkeypatch.setenv("QUIZBOT_DATABASE_URL", url)
    parser = build_parser()

    def report(*argv: str) -> str:
        args = parser.parse_args(["report", *argv])
        assert args.func(args) == 0
        return capsys.readouterr().out

    lines = list(csv.reader(io.StringIO(report("--format", "csv"))))
    assert len(lines) == 2 and lines[1][2:6] == ["1", "2", "1", "50"]
    assert report("--platform", "slack", "--workspace", "T1").splitlines()[1].endswith("(1)")
    elsewhere = report("--platform", "slack", "--workspace", "T1", "--channel", "C9")
    assert elsewhere.splitlines() == [
        "question  topic  asked  answers  correct  reports  most chosen wrong"
    ]
    with pytest.raises(UserFacingError, match="--workspace needs --platform"):
        report("--workspace", "T1")
