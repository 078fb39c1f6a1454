"""Every validator problem names the file, the question id and the field, and says the fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.domain import Locale
from bot.errors import QuestionBankError
from questions import load_bank, validate_bank

from .conftest import WriteQuestion, valid_question

ProblemIn = Callable[..., str]


def only_problem(bank_dir: Path) -> str:
    problems = validate_bank(bank_dir)
    assert len(problems) == 1, problems
    return problems[0]


@pytest.fixture
def problem_in(bank_dir: Path, write_question: WriteQuestion) -> ProblemIn:
    """Write `data` as `write_question` does; return the one problem the validator finds."""

    def problem(data: dict[str, Any] | str, name: str | None = None) -> str:
        write_question(data, name=name)
        return only_problem(bank_dir)

    return problem


def test_valid_file_loads_into_a_question(bank_dir: Path, write_question: WriteQuestion) -> None:
    write_question(valid_question())
    bank = load_bank(bank_dir)
    q = bank.get("sample-question")
    assert q is not None
    assert (q.answer, q.demo, q.choice_count) == (1, "fragmentation", 4)


def test_yaml_syntax_error_reports_the_line(problem_in: ProblemIn) -> None:
    problem = problem_in("id: broken\ntopic: [unclosed\ndifficulty: 1\n", name="broken.yaml")
    assert problem.startswith("broken.yaml: line ")
    assert "YAML syntax error" in problem
    assert "fix the YAML" in problem


def test_duplicate_key_in_one_file_is_a_yaml_error(problem_in: ProblemIn) -> None:
    problem = problem_in("id: twice\nid: twice\n", name="twice.yaml")
    assert "line 2" in problem
    assert "duplicate key 'id'" in problem


def test_non_mapping_document_is_reported(problem_in: ProblemIn) -> None:
    problem = problem_in("- just\n- a list\n", name="listy.yaml")
    assert problem.startswith("listy.yaml: the document is a list, not a mapping")


def test_empty_file_is_reported(problem_in: ProblemIn) -> None:
    assert problem_in("", name="empty.yaml") == (
        "empty.yaml: the file is empty; write one question as a mapping"
    )


@pytest.mark.parametrize("locale", ["en", "el"])
def test_missing_locale_is_named(problem_in: ProblemIn, locale: str) -> None:
    data = valid_question()
    del data[locale]
    problem = problem_in(data)
    assert problem.startswith(f"sample-question.yaml (id sample-question): {locale}: ")
    assert "both en and el are required" in problem


def test_answer_out_of_range_names_the_choice_count(problem_in: ProblemIn) -> None:
    assert problem_in(valid_question(answer=5)) == (
        "sample-question.yaml (id sample-question): answer: answer 5 is out of range for "
        "en.choices (4 choices; answer is a 0-based index 0..3)"
    )


def test_negative_answer_is_rejected(problem_in: ProblemIn) -> None:
    problem = problem_in(valid_question(answer=-1))
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


def test_file_name_must_match_the_id(problem_in: ProblemIn) -> None:
    problem = problem_in(valid_question(), name="q3.yaml")
    assert problem.startswith("q3.yaml (id sample-question): id: ")
    assert "rename the file to sample-question.yaml" in problem


def test_yml_suffix_is_asked_to_be_renamed(problem_in: ProblemIn) -> None:
    problem = problem_in(valid_question(), name="sample-question.yml")
    assert problem.startswith("sample-question.yml (id sample-question): file name: ")
    assert "rename it to end in .yaml" in problem


def test_choice_counts_must_match_across_locales(problem_in: ProblemIn) -> None:
    data = valid_question()
    data["el"]["choices"] = data["el"]["choices"][:3]
    problem = problem_in(data)
    assert problem.startswith("sample-question.yaml (id sample-question): el.choices: ")
    assert "en has 4, el has 3" in problem


@pytest.mark.parametrize(
    ("field", "locale", "limit"),
    [("prompt", "en", 300), ("explanation", "el", 600)],
)
def test_text_longer_than_the_limit_is_reported(
    problem_in: ProblemIn, field: str, locale: str, limit: int
) -> None:
    data = valid_question()
    data[locale][field] = "x" * (limit + 1)
    assert problem_in(data) == (
        f"sample-question.yaml (id sample-question): {locale}.{field}: "
        f"{limit + 1} characters, the limit is {limit}; shorten it"
    )


def test_choice_longer_than_120_characters_is_reported_by_index(problem_in: ProblemIn) -> None:
    data = valid_question()
    data["en"]["choices"][2] = "y" * 121
    assert problem_in(data) == (
        "sample-question.yaml (id sample-question): en.choices[2]: "
        "121 characters, the limit is 120; shorten it"
    )


@pytest.mark.parametrize("blank", ["", "   "])
def test_empty_or_blank_text_is_reported(problem_in: ProblemIn, blank: str) -> None:
    data = valid_question()
    data["el"]["prompt"] = blank
    assert problem_in(data) == (
        "sample-question.yaml (id sample-question): el.prompt: must not be empty; write the text"
    )


@pytest.mark.parametrize("difficulty", [0, 4])
def test_difficulty_outside_1_to_3_is_reported(problem_in: ProblemIn, difficulty: int) -> None:
    problem = problem_in(valid_question(difficulty=difficulty))
    assert problem.startswith(
        f"sample-question.yaml (id sample-question): difficulty: difficulty {difficulty} "
        "is outside 1..3"
    )


def test_quoted_number_is_not_accepted_as_difficulty(problem_in: ProblemIn) -> None:
    problem = problem_in(valid_question(difficulty="2"))
    assert problem.startswith("sample-question.yaml (id sample-question): difficulty: ")
    assert "whole number" in problem


@pytest.mark.parametrize(
    ("where", "key", "field"),
    [((), "answr", "answr"), (("en",), "hint", "en.hint")],
)
def test_unknown_key_is_reported_with_the_allowed_keys(
    problem_in: ProblemIn,
    where: tuple[str, ...],
    key: str,
    field: str,
) -> None:
    data = valid_question()
    target: dict[str, Any] = data
    for part in where:
        target = target[part]
    target[key] = 1
    problem = problem_in(data)
    assert problem.startswith(
        f"sample-question.yaml (id sample-question): {field}: unknown key; remove it"
    )
    assert "allowed: " in problem


@pytest.mark.parametrize("field", ["topic", "demo"])
def test_value_that_is_not_kebab_case_is_reported(problem_in: ProblemIn, field: str) -> None:
    problem = problem_in(valid_question(**{field: "Caching_Allocator"}))
    assert problem.startswith(
        f"sample-question.yaml (id sample-question): {field}: 'Caching_Allocator' is not kebab-case"
    )


def test_id_that_is_not_kebab_case_is_reported(problem_in: ProblemIn) -> None:
    problem = problem_in(valid_question(id="Bad--Id"))
    assert problem.startswith("Bad--Id.yaml (id Bad--Id): id: 'Bad--Id' is not kebab-case")


def test_missing_references_are_reported(problem_in: ProblemIn) -> None:
    problem = problem_in(valid_question(references=[]))
    assert problem.startswith("sample-question.yaml (id sample-question): references: ")
    assert "add at least one link" in problem


def test_reference_must_be_an_https_link(problem_in: ProblemIn) -> None:
    problem = problem_in(valid_question(references=["pytorch docs"]))
    assert problem.startswith(
        "sample-question.yaml (id sample-question): references[0]: 'pytorch docs' is not an "
        "https:// link"
    )


def test_repeated_choice_text_is_reported(problem_in: ProblemIn) -> None:
    data = valid_question()
    data["en"]["choices"][3] = " first "
    assert problem_in(data) == (
        "sample-question.yaml (id sample-question): en.choices[3]: same text as "
        "en.choices[0]; every choice must differ"
    )


def test_file_without_id_is_named_without_one(problem_in: ProblemIn) -> None:
    data = valid_question()
    del data["id"]
    assert (
        problem_in(data, name="anonymous.yaml")
        == "anonymous.yaml: id: required field is missing; add it"
    )


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
