"""`questions lint`: the bank-wide limits on small temporary banks, and the warnings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from questions.lint import differ_only_in_code, joke_pattern, longest_margin

from .conftest import WriteQuestion, valid_question
from .test_cli import run

# Four choices of equal length and unlike words: no answer is the uniquely longest, and no
# two choices are near-duplicates, unless a test says so.
EN = [f"{word} choice" for word in ("apple", "bread", "chair", "dance")]
EL = [f"{word} επιλογή" for word in ("μήλο", "ψωμί", "ρόδι", "λίρα")]


def question(n: int, answer: int, **overrides: Any) -> dict[str, Any]:
    data = valid_question(id=f"question-{n}", answer=answer)
    data["en"] = {**data["en"], "prompt": f"Question number {n}?", "choices": list(EN)}
    data["el"] = {**data["el"], "prompt": f"Ερώτηση αριθμός {n};", "choices": list(EL)}
    for locale in ("en", "el"):
        data[locale].update(overrides.pop(locale, {}))
    data.update(overrides)
    return data


def write_balanced_bank(write_question: WriteQuestion) -> None:
    for n in range(4):
        write_question(question(n, answer=n))


def longest_answer(answer: int, locale_choices: list[str]) -> list[str]:
    choices = list(locale_choices)
    choices[answer] = choices[answer] + " too"  # 1.33 times the others: below the warning
    return choices


def test_a_balanced_bank_passes_and_shows_both_figures(
    bank_dir: Path, write_question: WriteQuestion, capsys: pytest.CaptureFixture[str]
) -> None:
    write_balanced_bank(write_question)
    assert run(["lint", str(bank_dir)]) == 0
    out, err = capsys.readouterr()
    assert "correct choice uniquely longest: en 0/4 (0.0%), el 0/4 (0.0%)" in out
    assert "answer positions: A 1 (25.0%), B 1 (25.0%), C 1 (25.0%), D 1 (25.0%)" in out
    assert out.rstrip().endswith("0 warnings")
    assert err == ""


@pytest.mark.slow
def test_the_packaged_bank_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["lint"]) == 0
    assert capsys.readouterr().err == ""


def test_answer_longest_in_a_quarter_of_the_bank_is_still_within_the_limit(
    bank_dir: Path, write_question: WriteQuestion, capsys: pytest.CaptureFixture[str]
) -> None:
    write_question(question(0, 0, en={"choices": longest_answer(0, EN)}))
    for n in range(1, 4):
        write_question(question(n, answer=n))
    assert run(["lint", str(bank_dir)]) == 0
    assert "en 1/4 (25.0%), el 0/4 (0.0%)" in capsys.readouterr().out


def test_answer_longest_too_often_breaks_the_limit_for_that_locale_only(
    bank_dir: Path, write_question: WriteQuestion, capsys: pytest.CaptureFixture[str]
) -> None:
    for n in range(4):
        write_question(question(n, n, el={"choices": longest_answer(n, EL)}))
    assert run(["lint", str(bank_dir)]) == 1
    out, err = capsys.readouterr()
    assert "el 4/4 (100.0%)" in out
    assert (
        "bank-wide limit broken: el: the correct choice is the uniquely longest in 4 of 4 "
        "questions (100.0%), above the 25% limit" in err
    )
    assert err.count("bank-wide limit broken") == 1


def test_answers_piled_on_one_letter_break_the_spread(
    bank_dir: Path, write_question: WriteQuestion, capsys: pytest.CaptureFixture[str]
) -> None:
    for n in range(4):
        write_question(question(n, answer=1))
    assert run(["lint", str(bank_dir)]) == 1
    err = capsys.readouterr().err
    assert (
        "answer position A holds 0 of 4 answers (0.0%), outside 15%-35%; move answers to A" in err
    )
    assert (
        "answer position B holds 4 of 4 answers (100.0%), outside 15%-35%; move answers away from B"
        in err
    )
    assert err.count("bank-wide limit broken") == 4


def test_warnings_name_the_question_and_leave_the_exit_status_alone(
    bank_dir: Path, write_question: WriteQuestion, capsys: pytest.CaptureFixture[str]
) -> None:
    wide = list(EN)
    wide[0] = "apple choice, a great deal longer than every other choice"
    write_question(question(0, 0, en={"choices": wide}))
    joke = list(EN)
    joke[0] = "The font size of the log files"
    write_question(question(1, 1, difficulty=2, en={"choices": joke}))
    write_question(question(2, 2, difficulty=1, en={"choices": joke}))  # allowed when easy
    twins = ["Only if both graphs have identical input shapes", *EN[1:]]
    twins[1] = "Only if both graphs have identical output shapes"
    write_question(question(3, 3, en={"choices": twins}))
    assert run(["lint", str(bank_dir)]) == 0
    out = capsys.readouterr().out
    warnings = [line for line in out.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 3, warnings
    margin = len(wide[0]) / len(EN[1])
    assert warnings[0].startswith(
        f"warning: question-0: en.choices[0]: the correct choice is {margin:.2f}x as long"
    )
    assert (
        "question-1: en.choices[0]: 'The font size of the log files' reads as a joke" in warnings[1]
    )
    assert "question-3: en.choices[0]: near-duplicate of en.choices[1]" in warnings[2]
    assert out.rstrip().endswith("3 warnings")


def test_json_output_carries_the_figures_and_the_breaches(
    bank_dir: Path, write_question: WriteQuestion, capsys: pytest.CaptureFixture[str]
) -> None:
    for n in range(4):
        write_question(question(n, answer=0))
    assert run(["lint", str(bank_dir), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["questions"] == 4
    assert report["longest_share"] == {"en": 0.0, "el": 0.0}
    assert report["positions"] == {"A": 4}
    assert len(report["breaches"]) == 4
    assert report["warnings"] == []


def test_an_invalid_bank_reports_its_problems(
    bank_dir: Path, write_question: WriteQuestion, capsys: pytest.CaptureFixture[str]
) -> None:
    write_question(valid_question(answer=7))
    assert run(["lint", str(bank_dir)]) == 1
    assert "answer: answer 7 is out of range" in capsys.readouterr().err


def test_longest_margin_counts_only_a_unique_longest_answer() -> None:
    assert longest_margin(("aaaa", "bb", "cc", "dd"), 0) == 2.0
    assert longest_margin(("aaaa", "bbbb", "cc", "dd"), 0) is None
    assert longest_margin(("aa", "bbbb", "cc", "dd"), 0) is None


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("16.0 GiB", "8.0 GiB", True),
        ("FSDP with ShardingStrategy.NO_SHARD", "FSDP with ShardingStrategy.FULL_SHARD", True),
        ("Only if the shapes match", "Only if the streams match", False),
    ],
)
def test_choices_differing_only_in_numbers_or_identifiers_are_not_duplicates(
    a: str, b: str, expected: bool
) -> None:
    assert differ_only_in_code(a, b) is expected


@pytest.mark.parametrize(
    ("text", "joke"),
    [
        ("Disabling the GPU cooling system", True),
        ("To encrypt the weights", True),
        ("Τη συχνότητα ρολογιού της GPU", True),
        ("Το μέγεθος της γραμματοσειράς στα logs", True),
        ("PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:20", False),
        ("Fragmented 4-bit weights, by storing them in pages of 16 tokens", False),
        ("Μνήμη GPU δεσμευμένη για έναν τανυστή", False),
    ],
)
def test_joke_patterns_catch_the_tell_tale_subjects_only(text: str, joke: bool) -> None:
    assert (joke_pattern(text) is not None) is joke
