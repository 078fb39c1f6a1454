"""The console adapter: a round played from a pipe, as in the README."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.console.chat import ConsoleChat
from adapters.console.play import ConsoleSession
from bot.bank import QuestionBank
from bot.clock import FakeClock
from bot.domain import Locale, Platform
from tests.quiz import quiz_of

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "/ask fragmentation\n2\n/as bob\n4\n/close\n/leaderboard\n"
# For the tests about the console's own words: no runner, whose fork server would import
# torch first (4 s a run on two cores). The round, the README's and the demos' tests keep it.
NO_DEMOS = {"QUIZBOT_RUNNER": "off"}


def run_play(
    tmp_path: Path, script: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    extra = env or {}
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUIZBOT_")}
    env["QUIZBOT_DATABASE_URL"] = f"sqlite:///{tmp_path / 'play.db'}"
    env.update(extra)
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "play", *args],
        input=script,
        capture_output=True,
        text=True,
        cwd=tmp_path,  # plots are written under the working directory
        env=env,
        timeout=120,
    )


def test_scripted_round_from_a_pipe_shows_question_outcomes_reveal_and_board(
    tmp_path: Path, bank: QuestionBank
) -> None:
    done = run_play(tmp_path, SCRIPT, "--seed", "2")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    # The question, with its lettered choices and buttons.
    assert "== Question ·" in out and "[A]  [B]  [C]  [D]" in out
    asked = next(q for q in bank if q.text(Locale.EN).prompt in out)
    explanation = asked.text(Locale.EN).explanation
    # Each user's private outcome, with the explanation, marked as private.
    assert "(only you can see this)" in out and "(only bob can see this)" in out
    assert out.count(explanation) >= 3  # you, bob, and the reveal
    # The reveal in the thread, with the distribution.
    assert "↳ thread of" in out and "== Answer: " in out and "2 answers:" in out
    assert "- B: " in out and "- D: " in out
    # A leaderboard with both users.
    board = out[out.index("== Leaderboard ==") :]
    assert "you" in board and "bob" in board and "2 players" in board


@pytest.mark.slow
def test_a_greek_channel_gets_the_consoles_own_words_in_greek(tmp_path: Path) -> None:
    done = run_play(tmp_path, "/lang el\n" + SCRIPT, "--seed", "2", env=NO_DEMOS)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "(ορατό μόνο σε: you)" in out and "(ορατό μόνο σε: bob)" in out
    assert re.search(r"↳ νήμα του \[m\d+\]", out) and re.search(r"\[m\d+\] έκλεισε \(", out)
    assert "sees this" not in out and "thread of" not in out and "] closed" not in out


@pytest.mark.slow
def test_unknown_console_command_and_bad_input_get_clear_lines(tmp_path: Path) -> None:
    done = run_play(tmp_path, "/frobnicate\n7x\n2\n/lang xx\n", env=NO_DEMOS)
    assert done.returncode == 0, done.stderr
    assert "Unknown command 'frobnicate'" in done.stdout
    assert "Type a choice number" in done.stdout
    assert "No open question" in done.stdout
    assert "Unknown language 'xx'" in done.stdout


def test_unopenable_database_exits_non_zero_with_a_message(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUIZBOT_")}
    env["QUIZBOT_DATABASE_URL"] = f"sqlite:///{tmp_path / 'missing-dir' / 'q.db'}"
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "play"],
        input="/ask\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert "does not exist" in done.stderr and "QUIZBOT_DATABASE_URL" in done.stderr


async def test_console_session_switches_language_and_users(
    store: object, bank: QuestionBank, clock: FakeClock
) -> None:
    out = io.StringIO()
    chat = ConsoleChat(out)
    async with quiz_of(store, {Platform.CONSOLE: chat}, bank, clock, seed=2) as quiz:
        session = ConsoleSession(quiz, chat, out)
        for line in ["/lang el", "/ask", "a", "/as maria", "b", "/quit", "/ask"]:
            await session.handle(line)
            if session.done:
                break
    text = out.getvalue()
    assert "Ελληνικά" in text and "== Ερώτηση ·" in text
    assert "(ορατό μόνο σε: maria)" in text  # the channel is Greek by now
    assert text.count("== Ερώτηση ·") == 1  # /quit stopped the script


def test_a_demo_prints_its_report_and_the_demo_button_runs_once(tmp_path: Path) -> None:
    script = (
        "/demos\n/demos button\n/ask fragmentation\n2\n/close\n"
        "/press demo\n/as bob\n/press demo\n/demo fragmentation\n"
    )
    done = run_play(tmp_path, script, "--seed", "3")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Demo policy here: *auto*" in out or "Demo policy here: auto" in out
    assert "Demo policy here is now" in out and "button" in out
    assert "[Run the demo]" in out
    assert "its result appears in the question's thread" in out  # the first press
    assert "already" in out  # bob's press: told where it is, nothing run twice
    # The status line becomes the report, and the console prints the report's text.
    assert out.count("== Demo · ") >= 2  # the button's run and /demo fragmentation
    assert "simulated" in out.lower()


async def test_a_form_is_asked_one_field_per_line_and_errors_ask_again(
    store: object, bank: QuestionBank, clock: FakeClock
) -> None:
    from bot.features import ButtonKind, Feature, FormKind, Parts
    from bot.forms import FieldKind, Form, FormField, Submission, SubmitReply
    from bot.interactions import Click
    from bot.messages import Button, Message

    out = io.StringIO()
    chat = ConsoleChat(out)
    got: list[Submission] = []

    async def opener(click: Click, locale: Locale) -> Form | Message:
        fields = (FormField("a", "First"), FormField("n", "A number", FieldKind.NUMBER))
        return Form("twofields", click.post_id, "", "Two fields", fields)

    async def submitted(sub: Submission, locale: Locale) -> SubmitReply:
        if not sub.values["n"].isdigit():
            return SubmitReply(errors={"n": "not a number"})
        got.append(sub)
        return SubmitReply(Message(body="thanks"))

    def two_fields(parts: Parts) -> Feature:
        return Feature(
            "two-fields",
            buttons=[ButtonKind("twofields", form=opener)],
            forms=[FormKind("twofields", submitted)],
        )

    chats = {Platform.CONSOLE: chat}
    async with quiz_of(store, chats, bank, clock, features=[two_fields], seed=1) as quiz:
        session = ConsoleSession(quiz, chat, out)
        await session.click(Button("", "twofields", 7, ""))
        for line in ("hello", "x", "12"):
            await session.handle(line)
    text = out.getvalue()
    assert "== Two fields ==" in text and "First:" in text and "! n: not a number" in text
    (sub,) = got
    assert dict(sub.values) == {"a": "hello", "n": "12"}
    assert "thanks" in text and session.form is None


@pytest.mark.slow
def test_a_generated_question_takes_a_typed_number_in_the_console(tmp_path: Path) -> None:
    script = "/ask request-rounding\n/press number\nlots\n3\n/close\n"
    done = run_play(tmp_path, script, "--seed", "2", env=NO_DEMOS)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "[Type the number…]" in out
    assert "== Type the number ==" in out and "is not a number" in out
    assert "Not quite. You typed 3" in out or "Correct: 3" in out
    assert "The number:" in out and "1 typed prediction:" in out


@pytest.mark.slow
def test_the_memory_clinic_answers_a_snapshot_privately_in_the_console(tmp_path: Path) -> None:
    from tests.clinic.snapshots import growing_batch, write

    snapshot = write(tmp_path / "snap.pickle", growing_batch())
    garbage = tmp_path / "notes.txt"
    garbage.write_text("not a snapshot")
    script = f"/clinic {snapshot}\n/clinic {garbage}\n/clinic {tmp_path / 'missing'}\n"
    done = run_play(tmp_path, script)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "🩺 Analysing `snap.pickle`" in out and "(only you can see this)" in out
    assert "PYTORCH_CUDA_ALLOC_CONF=" in out  # the line to copy
    assert "plot: quizbot-plots/" in out
    assert "is not a pickle file" in out
    assert "no such file" in out
    off = run_play(tmp_path, f"/clinic {snapshot}\n", "--seed", "1", env={"QUIZBOT_RUNNER": "off"})
    assert "QUIZBOT_RUNNER=off" in off.stdout


@pytest.mark.slow
def test_help_shows_console_syntax_and_the_consoles_own_commands(tmp_path: Path) -> None:
    script = (
        "/help\n/quiz ask fragmentation\n/pres\n/leaderbord\n/lang\n/close now\n"
        '/schedule set cron "30 9 * * 1-5" UTC\n/quit\n'
    )
    done = run_play(tmp_path, script, env=NO_DEMOS)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    shown = out.replace("you> /quiz ask", "").replace("(/quiz ask works too)", "")
    assert "`/ask [topic]`" in out and "/quiz " not in shown, out
    for usage in ("/as NAME", "/clock +1d", "/press [kind]", "/import PATH", "/cancel", "/quit"):
        assert usage in out, usage
    assert "number (type a number)" in out
    assert "== Question ·" in out  # /quiz ask ran as /ask
    assert "Unknown command 'pres'. Did you mean /press?" in out
    assert "Unknown command 'leaderbord'. Did you mean /leaderboard?" in out
    assert "/lang needs the language" in out and "Example: /lang en" in out
    assert "/close does not take 'now'" in out
    assert 'cron "30 9 * * 1-5" UTC' in out


@pytest.mark.slow
def test_clinic_without_a_path_says_how_to_record_a_snapshot_or_get_the_sample(
    tmp_path: Path,
) -> None:
    done = run_play(tmp_path, "/clinic\n")
    assert done.returncode == 0, done.stderr
    assert "_record_memory_history" in done.stdout and "/clinic PATH" in done.stdout
    assert "quizbot sim sample-snapshot sample.pickle" in done.stdout
