"""`quizbot questions import|export|list --workspace`, `quizbot member export|forget` and
the reports in `quizbot report`, against the bot's database (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from bot.clock import FakeClock
from bot.domain import ChannelRef, Platform, PostKind
from bot.team import FlagReason, Workspace
from storage.store import SqlStore
from tests.conftest import user
from tests.fakes import RecordingChat
from tests.questions.test_team_files import HEADER, ROW, TRIVIA, otdb
from tests.quiz import asked, quiz_of

WS = "slack:T1"


def test_import_reports_bad_rows_adds_the_rest_once_and_export_reads_back(
    cli: object, tmp_path: Path
) -> None:
    run = cli  # type: ignore[assignment]
    source = tmp_path / "in"
    source.mkdir()
    (source / "ours.csv").write_text(f"{HEADER}\n{ROW}\n{ROW.replace(',en,', ',fr,')}\n")
    (source / "trivia.json").write_bytes(otdb(TRIVIA))
    (source / "notes.txt").write_text("not a question file")
    code, out, err = run("questions", "import", str(source), "--workspace", WS, "--approve")
    assert code == 1
    assert "ours.csv: line 3: locale: 'fr' is not supported" in err
    assert "2 questions added to slack:T1, approved" in out
    code, out, _ = run("questions", "import", str(source), "--workspace", WS)
    assert "0 questions added" in out and "1 already in the pack" in out

    code, out, _ = run("questions", "list", "--workspace", WS, "--format", "json")
    listed = json.loads(out)
    assert code == 0 and {r["state"] for r in listed} == {"approved"} and len(listed) == 2
    assert {r["origin"] for r in listed} == {"import"} and listed[0]["locales"] == ["en"]

    for fmt in ("yaml", "csv"):
        out_dir = tmp_path / fmt
        assert (
            run("questions", "export", "--workspace", WS, "--format", fmt, "--out", str(out_dir))[0]
            == 0
        )
        code, out, err = run("questions", "import", str(out_dir), "--workspace", WS)
        assert (code, err) == (0, "") and "0 questions added" in out, out
    code, out, _ = run("questions", "list", "--workspace", "discord:G1", "--format", "json")
    assert json.loads(out) == []  # another workspace's pack is its own


def test_whole_files_refused_and_bad_workspaces_get_one_clear_line(
    cli: object, tmp_path: Path
) -> None:
    run = cli  # type: ignore[assignment]
    big = tmp_path / "big.csv"
    with big.open("wb") as f:
        f.truncate(50 * 1024 * 1024)
    code, _, err = run("questions", "import", str(big), "--workspace", WS)
    assert code == 1 and "big.csv is 52.4 MB, over the 8 MiB limit" in err
    failed = tmp_path / "failed.json"
    failed.write_bytes(otdb(TRIVIA, code=5))
    code, _, err = run("questions", "import", str(failed), "--workspace", WS)
    assert code == 1 and "response_code is 5 (Rate Limit" in err
    code, _, err = run("questions", "import", str(failed), "--workspace", "T1")
    assert code == 2 and "'T1' is not a workspace: write the platform and its id" in err
    code, _, err = run("questions", "import", str(tmp_path / "nope"), "--workspace", WS)
    assert code == 2 and "no such file or directory" in err


def test_member_forget_and_export_and_reports_in_quizbot_report(
    cli: object, db_url: str, bank: object
) -> None:
    run = cli  # type: ignore[assignment]
    channel = ChannelRef(Platform.SLACK, "T1", "C1")
    ann, bob = user("ann"), user("bob")

    async def seed() -> str:
        async with SqlStore(db_url, clock=FakeClock()) as store:
            chats = {Platform.SLACK: RecordingChat()}
            async with quiz_of(store, chats, bank, store.clock, features=[]) as quiz:  # type: ignore[arg-type]
                service = quiz.service
                post = await asked(service, channel, kind=PostKind.SCHEDULED)
                await service.record_answer(post.id, ann, 0)
                await service.record_answer(post.id, bob, 1)
                await service.close(post.id)
            question = await store.questions.get(post.question_hash)
            assert question is not None
            await store.team.flag(post, question, ann, FlagReason.TYPO, "teh", store.clock.now())
            return question.id

    qid = asyncio.run(seed())
    code, out, _ = run("report", "--format", "csv")
    assert (
        code == 0
        and out.splitlines()[0].endswith(",reports")
        and out.splitlines()[1].endswith(",1")
    )
    code, out, _ = run("member", "export", "slack:T1:UANN")
    data = json.loads(out)
    assert data["member"]["user"] == "UANN" and data["reports"][0]["question_id"] == qid
    code, out, _ = run("member", "forget", "slack:UANN")
    assert code == 0 and "slack:T1:UANN erased: 1 answers" in out and "1 reports kept" in out
    code, _, err = run("member", "forget", "slack:UANN")
    assert code == 1 and "nothing to erase" in err
    code, _, err = run("member", "forget", "UANN")
    assert code == 2 and "is not a member" in err
    assert Workspace.parse("console") == Workspace(Platform.CONSOLE, "console")
