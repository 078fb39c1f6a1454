"""`questions validate|list|show|stats`, driven through a real argparse parser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from bot.bank import question_from_dict
from bot.cli import build_parser
from questions import PYTORCH_VERSION, load_bank
from questions.loader import BANK_DIR

from .conftest import WriteQuestion, valid_question


def run(argv: list[str]) -> int:
    """`quizbot questions *argv`, in this process: its exit code."""
    args = build_parser().parse_args(["questions", *argv])
    code: int = args.func(args)
    return code


def test_validate_packaged_bank_prints_count_and_exits_0(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(["validate"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == f"{len(load_bank())} questions OK"
    assert err == ""


def test_validate_broken_bank_prints_every_problem_and_exits_1(
    bank_dir: Path, write_question: WriteQuestion, capsys: pytest.CaptureFixture[str]
) -> None:
    write_question(valid_question(answer=8, difficulty=0))
    assert run(["validate", str(bank_dir)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "answer: answer 8 is out of range" in err
    assert "difficulty: difficulty 0 is outside 1..3" in err
    assert "2 problems" in err


def test_list_json_round_trips_to_the_same_questions_and_file_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(["list", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    bank = load_bank()
    assert [entry["id"] for entry in listed] == [q.id for q in bank]
    for entry in listed:
        assert question_from_dict(entry) == bank.get(entry["id"])
        on_disk = yaml.safe_load((BANK_DIR / f"{entry['id']}.yaml").read_text("utf-8"))
        on_disk.setdefault("demo", None)
        for locale in ("en", "el"):
            on_disk[locale] = {
                k: v.strip() if isinstance(v, str) else v for k, v in on_disk[locale].items()
            }
        assert entry == on_disk


def test_list_text_shows_one_line_per_question(
    bank_dir: Path, write_question: WriteQuestion, capsys: pytest.CaptureFixture[str]
) -> None:
    write_question(valid_question())
    write_question(valid_question(id="other-question", demo=None))
    assert run(["list", "--path", str(bank_dir)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == ["other-question", "sample-question"]
    assert lines[-1] == "2 questions"


def test_show_prints_lettered_choices_and_the_answer_letter(
    bank_dir: Path, write_question: WriteQuestion, capsys: pytest.CaptureFixture[str]
) -> None:
    write_question(valid_question())
    assert run(["show", "sample-question", "--locale", "el", "--path", str(bank_dir)]) == 0
    out = capsys.readouterr().out
    assert "Ποιο είναι σωστό;" in out
    assert "  A. Πρώτο\n  B. Δεύτερο\n  C. Τρίτο\n  D. Τέταρτο\n" in out
    assert "Answer: B\n" in out
    assert "topic fragmentation · difficulty 1 · demo fragmentation" in out
    assert "https://pytorch.org/docs/stable/notes/cuda.html#memory-management" in out


def test_show_unknown_id_exits_1_with_a_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["show", "no-such-question"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "no question with id 'no-such-question'" in err


def test_show_on_a_broken_bank_exits_1(
    bank_dir: Path, write_question: WriteQuestion, capsys: pytest.CaptureFixture[str]
) -> None:
    write_question("[", name="broken.yaml")
    assert run(["show", "sample-question", "--path", str(bank_dir)]) == 1
    assert "broken.yaml: line" in capsys.readouterr().err


def test_stats_counts_topics_difficulties_and_locales(
    bank_dir: Path, write_question: WriteQuestion, capsys: pytest.CaptureFixture[str]
) -> None:
    write_question(valid_question())
    write_question(valid_question(id="second", topic="kv-cache", difficulty=3))
    write_question(valid_question(id="third", topic="kv-cache", difficulty=3))
    assert run(["stats", "--format", "json", "--path", str(bank_dir)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats == {
        "pytorch": PYTORCH_VERSION,
        "topic": {"fragmentation": 1, "kv-cache": 2},
        "difficulty": {"1": 1, "3": 2},
        "locale": {"el": 3, "en": 3},
        "total": {"questions": 3, "topics": 2, "demos": 1},
    }


def test_stats_text_has_a_total_per_section(
    bank_dir: Path, write_question: WriteQuestion, capsys: pytest.CaptureFixture[str]
) -> None:
    write_question(valid_question())
    write_question(valid_question(id="second", topic="kv-cache"))
    assert run(["stats", "--path", str(bank_dir)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"describes PyTorch {PYTORCH_VERSION}\n")
    assert "per topic:\n  fragmentation" in out
    assert out.count("  total                       2") == 2
    assert "  questions                   2" in out
    assert out.rstrip().endswith("total: 2 questions, 2 topics, 1 demos")
