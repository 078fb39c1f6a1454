"""Every validator problem names the file, the question id and the field, and says the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.domain import Locale
from bot.errors import QuestionBankError
from questions import load_bank, validate_bank

from .conftest import WriteQuestion, valid_question


def only_problem(bank_dir: Path) -> str:
    problems = validate_bank(bank_dir)
    assert len(problems) == 1, problems
    return problems[0]


def test_valid_file_loads_into_a_question(bank_dir: Path, write_question: WriteQuestion) -> None:
    write_question(valid_question())
    bank = load_bank(bank_dir)
    q = bank.get("sample-question")
    assert q is not None
    assert (q.answer, q.demo, q.choice_count) == (1, "fragmentation", 4)


def test_yaml_syntax_error_reports_the_line(bank_dir: Path, write_question: WriteQuestion) -> None:
    write_question("id: broken\ntopic: [unclosed\ndifficulty: 1\n", name="broken.yaml")
    problem = only_problem(bank_dir)
    assert problem.startswith("broken.yaml: line ")
    assert "YAML syntax error" in problem
    assert "fix the YAML" in problem


def test_duplicate_key_in_one_file_is_a_yaml_error(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    write_question("id: twice\nid: twice\n", name="twice.yaml")
    problem = only_problem(bank_dir)
    assert "line 2" in problem
    assert "duplicate key 'id'" in problem


def test_non_mapping_document_is_reported(bank_dir: Path, write_question: WriteQuestion) -> None:
    write_question("- just\n- a list\n", name="listy.yaml")
    problem = only_problem(bank_dir)
    assert problem.startswith("listy.yaml: the document is a list, not a mapping")


def test_empty_file_is_reported(bank_dir: Path, write_question: WriteQuestion) -> None:
    write_question("", name="empty.yaml")
    assert only_problem(bank_dir) == (
        "empty.yaml: the file is empty; write one question as a mapping"
    )


@pytest.mark.parametrize("locale", ["en", "el"])
def test_missing_locale_is_named(
    bank_dir: Path, write_question: WriteQuestion, locale: str
) -> None:
    data = valid_question()
    del data[locale]
    write_question(data)
    problem = only_problem(bank_dir)
    assert problem.startswith(f"sample-question.yaml (id sample-question): {locale}: ")
    assert "both en and el are required" in problem


def test_answer_out_of_range_names_the_choice_count(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    write_question(valid_question(answer=5))
    assert only_problem(bank_dir) == (
        "sample-question.yaml (id sample-question): answer: answer 5 is out of range for "
        "en.choices (4 choices; answer is a 0-based index 0..3)"
    )


def test_negative_answer_is_rejected(bank_dir: Path, write_question: WriteQuestion) -> None:
    write_question(valid_question(answer=-1))
    problem = only_problem(bank_dir)
    assert problem.startswith("sample-question.yaml (id sample-question): answer: ")
    assert "0-based" in problem


def test_duplicate_id_across_files_names_both_files(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    write_question(valid_question())
    write_question(valid_question(), name="sample-question-copy.yaml")
    problems = validate_bank(bank_dir)
    assert (
        "sample-question.yaml (id sample-question): id: duplicate id, already used by "
        "sample-question-copy.yaml; ids are unique, give this question a new id"
    ) in problems


def test_file_name_must_match_the_id(bank_dir: Path, write_question: WriteQuestion) -> None:
    write_question(valid_question(), name="q3.yaml")
    problem = only_problem(bank_dir)
    assert problem.startswith("q3.yaml (id sample-question): id: ")
    assert "rename the file to sample-question.yaml" in problem


def test_yml_suffix_is_asked_to_be_renamed(bank_dir: Path, write_question: WriteQuestion) -> None:
    write_question(valid_question(), name="sample-question.yml")
    problem = only_problem(bank_dir)
    assert problem.startswith("sample-question.yml (id sample-question): file name: ")
    assert "rename it to end in .yaml" in problem


def test_choice_counts_must_match_across_locales(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    data = valid_question()
    data["el"]["choices"] = data["el"]["choices"][:3]
    write_question(data)
    problem = only_problem(bank_dir)
    assert problem.startswith("sample-question.yaml (id sample-question): el.choices: ")
    assert "en has 4, el has 3" in problem


@pytest.mark.parametrize(
    ("field", "locale", "limit"),
    [("prompt", "en", 300), ("explanation", "el", 600)],
)
def test_text_longer_than_the_limit_is_reported(
    bank_dir: Path, write_question: WriteQuestion, field: str, locale: str, limit: int
) -> None:
    data = valid_question()
    data[locale][field] = "x" * (limit + 1)
    write_question(data)
    assert only_problem(bank_dir) == (
        f"sample-question.yaml (id sample-question): {locale}.{field}: "
        f"{limit + 1} characters, the limit is {limit}; shorten it"
    )


def test_choice_longer_than_120_characters_is_reported_by_index(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    data = valid_question()
    data["en"]["choices"][2] = "y" * 121
    write_question(data)
    assert only_problem(bank_dir) == (
        "sample-question.yaml (id sample-question): en.choices[2]: "
        "121 characters, the limit is 120; shorten it"
    )


@pytest.mark.parametrize("blank", ["", "   "])
def test_empty_or_blank_text_is_reported(
    bank_dir: Path, write_question: WriteQuestion, blank: str
) -> None:
    data = valid_question()
    data["el"]["prompt"] = blank
    write_question(data)
    assert only_problem(bank_dir) == (
        "sample-question.yaml (id sample-question): el.prompt: must not be empty; write the text"
    )


@pytest.mark.parametrize("difficulty", [0, 4])
def test_difficulty_outside_1_to_3_is_reported(
    bank_dir: Path, write_question: WriteQuestion, difficulty: int
) -> None:
    write_question(valid_question(difficulty=difficulty))
    problem = only_problem(bank_dir)
    assert problem.startswith(
        f"sample-question.yaml (id sample-question): difficulty: difficulty {difficulty} "
        "is outside 1..3"
    )


def test_quoted_number_is_not_accepted_as_difficulty(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    write_question(valid_question(difficulty="2"))
    problem = only_problem(bank_dir)
    assert problem.startswith("sample-question.yaml (id sample-question): difficulty: ")
    assert "whole number" in problem


@pytest.mark.parametrize(
    ("where", "key", "field"),
    [((), "answr", "answr"), (("en",), "hint", "en.hint")],
)
def test_unknown_key_is_reported_with_the_allowed_keys(
    bank_dir: Path,
    write_question: WriteQuestion,
    where: tuple[str, ...],
    key: str,
    field: str,
) -> None:
    data = valid_question()
    target: dict[str, Any] = data
    for part in where:
        target = target[part]
    target[key] = 1
    write_question(data)
    problem = only_problem(bank_dir)
    assert problem.startswith(
        f"sample-question.yaml (id sample-question): {field}: unknown key; remove it"
    )
    assert "allowed: " in problem


@pytest.mark.parametrize("field", ["topic", "demo"])
def test_value_that_is_not_kebab_case_is_reported(
    bank_dir: Path, write_question: WriteQuestion, field: str
) -> None:
    write_question(valid_question(**{field: "Caching_Allocator"}))
    problem = only_problem(bank_dir)
    assert problem.startswith(
        f"sample-question.yaml (id sample-question): {field}: 'Caching_Allocator' is not kebab-case"
    )


def test_id_that_is_not_kebab_case_is_reported(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    write_question(valid_question(id="Bad--Id"))
    problem = only_problem(bank_dir)
    assert problem.startswith("Bad--Id.yaml (id Bad--Id): id: 'Bad--Id' is not kebab-case")


def test_missing_references_are_reported(bank_dir: Path, write_question: WriteQuestion) -> None:
    write_question(valid_question(references=[]))
    problem = only_problem(bank_dir)
    assert problem.startswith("sample-question.yaml (id sample-question): references: ")
    assert "add at least one link" in problem


def test_reference_must_be_an_https_link(bank_dir: Path, write_question: WriteQuestion) -> None:
    write_question(valid_question(references=["pytorch docs"]))
    problem = only_problem(bank_dir)
    assert problem.startswith(
        "sample-question.yaml (id sample-question): references[0]: 'pytorch docs' is not an "
        "https:// link"
    )


def test_repeated_choice_text_is_reported(bank_dir: Path, write_question: WriteQuestion) -> None:
    data = valid_question()
    data["en"]["choices"][3] = " first "
    write_question(data)
    assert only_problem(bank_dir) == (
        "sample-question.yaml (id sample-question): en.choices[3]: same text as "
        "en.choices[0]; every choice must differ"
    )


def test_file_without_id_is_named_without_one(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    data = valid_question()
    del data["id"]
    write_question(data, name="anonymous.yaml")
    assert only_problem(bank_dir) == "anonymous.yaml: id: required field is missing; add it"


def test_every_problem_in_every_file_is_reported(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    data = valid_question(difficulty=7, answer=9, topic="Bad Topic")
    del data["el"]
    write_question(data)
    write_question("a: [", name="syntax.yaml")
    problems = validate_bank(bank_dir)
    fields = sorted(p.split(": ")[1] for p in problems if p.startswith("sample-question.yaml"))
    assert fields == ["answer", "difficulty", "el", "topic"]
    assert any(p.startswith("syntax.yaml: line 1") for p in problems)


def test_load_bank_raises_with_every_problem(bank_dir: Path, write_question: WriteQuestion) -> None:
    write_question(valid_question(answer=4, difficulty=9))
    with pytest.raises(QuestionBankError) as caught:
        load_bank(bank_dir)
    assert len(caught.value.problems) == 2
    assert caught.value.problems == validate_bank(bank_dir)


def test_directory_without_question_files_is_a_problem(bank_dir: Path) -> None:
    assert only_problem(bank_dir).endswith(
        "no *.yaml question files found; add one file per question"
    )


def test_strings_are_stripped_of_surrounding_whitespace(
    bank_dir: Path, write_question: WriteQuestion
) -> None:
    data = valid_question()
    data["en"]["explanation"] = "  The second one is right. The others are wrong.\n"
    write_question(data)
    q = load_bank(bank_dir).get("sample-question")
    assert q is not None
    assert q.texts[Locale.EN].explanation == "The second one is right. The others are wrong."
