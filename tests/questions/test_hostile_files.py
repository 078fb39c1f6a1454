"""Hostile question files cost one short problem line each, in bounded time and memory,
and never stop the check of the other files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from questions import load_bank, validate_bank
from questions.bounded_yaml import MAX_DEPTH, MAX_FILE_BYTES
from questions.loader import MAX_PROBLEMS_PER_FILE
from tests.hostile import assert_bounded, measure

from .conftest import WriteQuestion, valid_question


def billion_laughs() -> str:
    """Nine anchored lists of nine aliases each: 10**9 strings once expanded."""
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        text += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
    return text + "id: *i\n"


def deep_nesting(levels: int) -> str:
    return "id: deep\ninputs: " + "[" * levels + "]" * levels + "\n"


ATTACKS = {
    "laughs.yaml": (billion_laughs(), "anchors and aliases (&a / *a) are not allowed"),
    "huge.yaml": ("id: " + "x" * (10 << 20) + "\n", "over the 64 KiB limit"),
    "deep.yaml": (deep_nesting(30_000), f"nested more than {MAX_DEPTH} levels deep"),
    "digits.yaml": ("id: digits\nanswer: " + "9" * 5000 + "\n", "a value cannot be read"),
    "date.yaml": ("id: date\ntopic: 2024-13-45\n", "a value cannot be read"),
}


@pytest.fixture
def hostile_bank(bank_dir: Path, write_question: WriteQuestion) -> Path:
    write_question(valid_question())
    for name, (text, _) in ATTACKS.items():
        write_question(text, name=name)
    return bank_dir


def test_each_hostile_file_gets_one_line_and_the_valid_file_still_loads(
    hostile_bank: Path,
) -> None:
    problems = validate_bank(hostile_bank)
    assert len(problems) == len(ATTACKS), problems
    for name, (_, expected) in ATTACKS.items():
        (line,) = [p for p in problems if p.startswith(f"{name}: ")]
        assert expected in line, line
        assert len(line) < 300, line
    for problem in problems:
        assert "Traceback" not in problem and "RecursionError" not in problem
    # Only the hostile files are refused: the good question is loaded alongside them.
    for name in ATTACKS:
        (hostile_bank / name).unlink()
    assert load_bank(hostile_bank).get("sample-question") is not None


def test_size_limit_names_the_file_and_the_limit(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    write_question("id: big\ntopic: " + "y" * MAX_FILE_BYTES + "\n", name="big.yaml")
    (problem,) = validate_bank(bank_dir)
    assert problem.startswith("big.yaml: the file is 65,552 bytes, over the 64 KiB limit")


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_hostile_file_is_answered_within_200_mb(hostile_bank: Path, name: str) -> None:
    for other in ATTACKS:
        if other != name:
            (hostile_bank / other).unlink()
    measured = measure(
        "from pathlib import Path\nfrom questions import validate_bank\n",
        f"return validate_bank(Path({str(hostile_bank)!r}))",
    )
    assert_bounded(measured)
    assert [p.split(": ")[0] for p in measured.out] == [name]


def test_a_long_id_is_cut_in_every_message(bank_dir: Path, write_question: WriteQuestion) -> None:
    data = valid_question(id="q" * 60_000, difficulty=9, answer=-1, topic="Bad Topic")
    write_question(yaml.safe_dump(data, width=10**6), name="long.yaml")
    problems = validate_bank(bank_dir)
    assert len(problems) >= 4
    for problem in problems:
        assert problem.startswith("long.yaml (id " + "q" * 60 + "…): "), problem[:100]
        assert len(problem) < 400


def test_many_problems_in_one_file_are_counted_not_all_listed(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    data = valid_question()
    data.update({f"unknown{i}": i for i in range(500)})
    write_question(data)
    problems = validate_bank(bank_dir)
    assert len(problems) == MAX_PROBLEMS_PER_FILE + 1
    assert problems[-1] == (
        "sample-question.yaml: 480 more problems in this file; fix the ones above first"
    )


def test_an_anchor_without_an_alias_is_refused_too(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    write_question("id: &name anchored\n", name="anchored.yaml")
    (problem,) = validate_bank(bank_dir)
    assert problem == (
        "anchored.yaml: line 1, column 5: anchors and aliases (&name / *name) are not "
        "allowed in question files; write the value out in full"
    )


def test_nesting_within_the_limit_is_accepted(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    nested: object = 1
    for _ in range(MAX_DEPTH - 2):  # the document and `inputs` are two levels
        nested = [nested]
    write_question(valid_question(inputs={"x": nested}))
    assert validate_bank(bank_dir) == []
    write_question(valid_question(inputs={"x": [nested]}))
    (problem,) = validate_bank(bank_dir)
    assert f"nested more than {MAX_DEPTH} levels deep" in problem


def test_a_large_malformed_file_keeps_a_short_syntax_message(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    write_question("a: {" + "k: 1, " * 10_000, name="flow.yaml")  # 60 KB, never closed
    (problem,) = validate_bank(bank_dir)
    assert problem.startswith("flow.yaml: line ") and "YAML syntax error" in problem
