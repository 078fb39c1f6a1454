"""`questions families` and `questions generate`, through a real argparse parser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from bot.bank import question_from_dict, question_to_dict
from bot.domain import Locale
from questions import load_bank, validate_bank
from questions.families import default_families, generate
from tests.questions.test_cli import run

FAMILIES = default_families()


def test_families_json_lists_ids_topics_difficulty_ranges_and_descriptions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(["families", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [f["id"] for f in listed] == FAMILIES.ids()
    assert len(listed) >= 17
    assert sum(f["kind"] == "allocator-trace" for f in listed) >= 10
    for entry in listed:
        low, high = entry["difficulty"]
        assert 1 <= low <= high <= 3
        assert entry["topic"] and entry["description"] and entry["scenarios"] > 0


def test_families_text_ends_with_the_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["families"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[0] == FAMILIES.ids()[0]
    traces = sum(f.kind == "allocator-trace" for f in FAMILIES)
    assert lines[-1] == f"{len(FAMILIES)} families, {traces} of them allocator-trace"


def test_generate_json_is_the_list_shape_plus_the_family_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        run(["generate", "fragmentation-fit", "--seed", "5", "--count", "3", "--format", "json"])
        == 0
    )
    listed = json.loads(capsys.readouterr().out)
    assert [e["id"] for e in listed] == [f"gen-fragmentation-fit-5-{i}" for i in range(3)]
    extra = {"family", "seed", "index", "choice_values", "unit", "numeric", "misconceptions"}
    for i, entry in enumerate(listed):
        expected = generate(FAMILIES.require("fragmentation-fit"), 5, i)
        assert set(entry) == set(question_to_dict(expected.question)) | extra
        bank_part = {k: v for k, v in entry.items() if k not in extra}
        assert question_from_dict(bank_part) == expected.question
        assert entry["family"] == "fragmentation-fit"
        assert entry["inputs"]["kind"] == "allocator-trace"
        assert entry["choice_values"] == list(expected.choice_values)
        assert entry["unit"] in ("bytes", "KiB", "MiB", "GiB", "count")


def test_generated_yaml_files_validate_and_load_as_the_same_questions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for family in FAMILIES.ids():
        assert (
            run(
                [
                    "generate",
                    family,
                    "--seed",
                    "11",
                    "--count",
                    "2",
                    "--format",
                    "yaml",
                    "--out",
                    str(tmp_path),
                ]
            )
            == 0
        )
    assert validate_bank(tmp_path) == []
    bank = load_bank(tmp_path)
    assert len(bank) == 2 * len(FAMILIES)
    for family in FAMILIES:
        for i in range(2):
            expected = generate(family, 11, i).question
            assert bank.get(expected.id) == expected  # content hash included


def test_generated_yaml_on_stdout_is_one_document_per_question(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(["generate", "kv-cache-size", "--count", "3", "--format", "yaml"]) == 0
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["id"] for d in documents] == [f"gen-kv-cache-size-0-{i}" for i in range(3)]


def test_generate_text_previews_in_the_chosen_locale(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["generate", "empty-cache-release", "--seed", "2", "--locale", "el"]) == 0
    out = capsys.readouterr().out
    q = generate(FAMILIES.require("empty-cache-release"), 2).question
    assert out.startswith(f"{q.id}  [family empty-cache-release")
    assert q.text(Locale.EL).prompt in out and q.text(Locale.EN).prompt not in out
    assert q.text(Locale.EL).explanation in out and "Answer: " in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["generate", "nope"], "unknown question family 'nope'; known families: request-rounding"),
        (["generate", "kv-cache-size", "--count", "0"], "--count 0 is out of range; use 1..1000"),
        (["generate", "kv-cache-size", "--count", "1001"], "--count 1001 is out of range"),
        (["generate", "kv-cache-size", "--seed", "-1"], "--seed -1 is out of range"),
        (
            ["generate", "kv-cache-size", "--out", "x"],
            "--out writes bank files; use it with --format yaml",
        ),
    ],
)
def test_bad_input_is_one_message_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and message in err
