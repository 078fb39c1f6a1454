"""Question files that are not bank YAML, turned into bank-file data one entry at a time:
CSV (``prompt,a,b,c,d,e,answer,explanation,topic,difficulty,locale,references``) and Open
Trivia DB JSON (``{"response_code": 0, "results": [...]}``).

Each entry comes out as data for the validator, or as the problems found before it
(where — the CSV line or the result's index — what is wrong, and the fix). A file that
cannot be read at all raises `UserFacingError` with one line.
"""

from __future__ import annotations

import csv
import hashlib
import html
import io
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from bot.csv_cells import unguard_cell
from bot.domain import LETTERS
from bot.errors import UserFacingError
from bot.quoting import cut, quoted
from questions.schema import LOCALES, TOPIC_MAX

CSV_COLUMNS: Final = (
    "prompt",
    "a",
    "b",
    "c",
    "d",
    "e",
    "answer",
    "explanation",
    "topic",
    "difficulty",
    "locale",
    "references",
)
CHOICE_COLUMNS: Final = ("a", "b", "c", "d", "e")
MAX_ENTRIES: Final = 20_000  # rows or results per file: split larger files
DIFFICULTY_WORDS: Final = {"easy": 1, "medium": 2, "hard": 3}
PLACEHOLDER_ID: Final = "team-new"  # replaced by the team id once valid
# Open Trivia DB's response codes (https://opentdb.com/api_config.php).
OTDB_CODES: Final = {
    1: "No Results: the API could not return that many questions; ask for fewer",
    2: "Invalid Parameter: the request's arguments are not valid; fix the request URL",
    3: "Token Not Found: the session token does not exist; request a new one",
    4: "Token Empty: every question for this query was returned; reset the token",
    5: "Rate Limit: too many requests (one per 5 seconds); wait and fetch again",
}
OTDB_SOURCE: Final = "Open Trivia Database, CC BY-SA 4.0"
_NOT_KEBAB = re.compile(r"[^a-z0-9]+")


@dataclass(slots=True)
class Entry:
    where: str  # "line 4", "results[2]"
    data: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def text_of(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserFacingError(
            f"{cut(name)}: byte {exc.start} is not UTF-8; save the file as UTF-8"
        ) from None


def question_data(
    prompt: str,
    choices: list[str],
    answer: int,
    explanation: str,
    topic: str,
    difficulty: Any,
    locale: str,
    references: list[str],
) -> dict[str, Any]:
    return {
        "id": PLACEHOLDER_ID,
        "topic": topic,
        "difficulty": difficulty,
        "answer": answer,
        "demo": None,
        "references": references,
        locale: {"prompt": prompt, "choices": choices, "explanation": explanation},
    }


# -- CSV -------------------------------------------------------------------------------


def csv_entries(name: str, text: str) -> Iterator[Entry]:
    """One entry per data row, numbered by the line it starts on."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise UserFacingError(f"{cut(name)}: line 1: {exc}; fix the header line") from None
    if header is None:
        raise UserFacingError(
            f"{cut(name)}: the file is empty; the first line is the header: {','.join(CSV_COLUMNS)}"
        )
    columns = [h.strip().lower() for h in header]
    missing = [c for c in CSV_COLUMNS if c not in columns]
    unknown = [c for c in columns if c not in CSV_COLUMNS]
    if missing or unknown or len(set(columns)) != len(columns):
        what = (
            f"has no {', '.join(repr(c) for c in missing)} column"
            if missing
            else f"has an unknown or repeated column {quoted(unknown[0] if unknown else columns)}"
        )
        raise UserFacingError(
            f"{cut(name)}: the header {what}; the first line must be: {','.join(CSV_COLUMNS)}"
        )
    _refuse_too_many(name, text)
    start = reader.line_num + 1
    while True:
        try:
            row = next(reader, None)
        except csv.Error as exc:
            why = str(exc)
            if "field limit" in why:  # the reader's own bound on one field
                why = f"a field is over {csv.field_size_limit():,} characters"
            yield Entry(
                f"line {start}",
                problems=[f"line {start}: {why}; the rest of the file is not read, fix this row"],
            )
            return
        if row is None:
            return
        where = f"line {start}"
        start = reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue  # a blank line
        if len(row) != len(columns):
            yield Entry(
                where,
                problems=[
                    f"{where}: {len(row)} fields, the header has {len(columns)}; quote text "
                    'that contains a comma ("like, this")'
                ],
            )
            continue
        cells = (unguard_cell(cell).strip() for cell in row)  # export's guard off first
        yield _csv_row(where, dict(zip(columns, cells, strict=True)))


def _refuse_too_many(name: str, text: str) -> None:
    """Count the rows first (nothing kept, a fraction of a second for the largest file),
    so a file of half a million tiny rows is refused before any is validated."""
    rows = 0
    try:
        for row in csv.reader(io.StringIO(text, newline="")):
            rows += any(cell.strip() for cell in row)
            if rows > MAX_ENTRIES + 1:  # the header is a row
                raise UserFacingError(
                    f"{cut(name)}: more than {MAX_ENTRIES:,} rows; split it into smaller files"
                )
    except csv.Error:
        return  # the reading pass reports it with its line


def _csv_row(where: str, row: dict[str, str]) -> Entry:
    entry = Entry(where)
    cells = [row[c] for c in CHOICE_COLUMNS]
    filled = [c for c in cells if c]
    last = max((i for i, c in enumerate(cells) if c), default=-1)
    if len(filled) != last + 1:
        gap = CHOICE_COLUMNS[cells.index("")]
        entry.problems.append(
            f"{where}: {gap}: empty before a filled choice; fill the choices in order from a"
        )
    letter = row["answer"].upper().rstrip(".)")
    answer = LETTERS.index(letter) if len(letter) == 1 and letter in LETTERS[: len(filled)] else -1
    if answer < 0:
        entry.problems.append(
            f"{where}: answer: {quoted(row['answer'])} is not a choice letter; use "
            f"A–{LETTERS[max(len(filled), 1) - 1]} (the row has {len(filled)} choices)"
        )
    locale = row["locale"].lower() or "en"
    if locale not in LOCALES:
        entry.problems.append(
            f"{where}: locale: {quoted(row['locale'])} is not supported; use "
            f"{' or '.join(LOCALES)} (or leave it empty for en)"
        )
    difficulty = _difficulty(row["difficulty"])
    if difficulty is None:
        entry.problems.append(
            f"{where}: difficulty: {quoted(row['difficulty'])} is not 1, 2 or 3 "
            "(easy, medium, hard); write one of them"
        )
    if not entry.problems:
        entry.data = question_data(
            row["prompt"],
            filled,
            answer,
            row["explanation"],
            row["topic"],
            difficulty,
            locale,
            row["references"].replace("|", " ").split(),
        )
    return entry


def _difficulty(text: str) -> int | None:
    word = text.strip().lower()
    if word in ("1", "2", "3"):
        return int(word)
    return DIFFICULTY_WORDS.get(word)


# -- Open Trivia DB --------------------------------------------------------------------


def otdb_entries(name: str, text: str) -> Iterator[Entry]:
    """One entry per result; HTML entities decoded, choices shuffled the same way on every
    import (seeded by the question), true/false questions as two choices."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UserFacingError(
            f"{cut(name)}: not JSON ({cut(str(exc))}); save the API's answer as it is"
        ) from None
    if not isinstance(doc, dict) or "results" not in doc:
        raise UserFacingError(
            f"{cut(name)}: not an Open Trivia DB answer; expected "
            '{"response_code": 0, "results": [...]}'
        )
    code = doc.get("response_code")
    if code != 0:
        meaning = OTDB_CODES.get(code, "not a success") if isinstance(code, int) else "missing"
        raise UserFacingError(
            f"{cut(name)}: response_code is {quoted(code)} ({meaning}); nothing was imported"
        )
    results = doc["results"]
    if not isinstance(results, list):
        raise UserFacingError(f"{cut(name)}: results is not a list; save the API's answer as it is")
    if len(results) > MAX_ENTRIES:
        raise UserFacingError(
            f"{cut(name)}: {len(results):,} results, over {MAX_ENTRIES:,}; split it into "
            "smaller files"
        )
    for i, item in enumerate(results):
        yield _otdb_result(f"results[{i}]", item)


def _otdb_result(where: str, item: Any) -> Entry:
    entry = Entry(where)
    if not isinstance(item, dict):
        entry.problems.append(f"{where}: expected an object, got {type(item).__name__}")
        return entry
    fields = ("type", "difficulty", "category", "question", "correct_answer", "incorrect_answers")
    missing = [f for f in fields if f not in item]
    wrong = item.get("incorrect_answers")
    if missing:
        entry.problems.append(f"{where}: {missing[0]}: required field is missing; add it")
        return entry
    texts = [item["question"], item["correct_answer"], item["category"]]
    if not isinstance(wrong, list) or not all(isinstance(x, str) for x in [*texts, *wrong]):
        entry.problems.append(
            f"{where}: question, answers and category must be text; save the API's answer as it is"
        )
        return entry
    prompt, correct, category = (html.unescape(x).strip() for x in texts)
    others = [html.unescape(x).strip() for x in wrong]
    if item["type"] == "boolean":
        choices = ["True", "False"]
        answer = 0 if correct.lower() == "true" else 1
    elif item["type"] == "multiple":
        choices = [correct, *others]
        random.Random(hashlib.sha256(prompt.encode()).digest()).shuffle(choices)
        answer = choices.index(correct)
    else:
        entry.problems.append(
            f"{where}: type: {quoted(item['type'])} is not multiple or boolean; remove the result"
        )
        return entry
    difficulty = DIFFICULTY_WORDS.get(str(item["difficulty"]).lower())
    if difficulty is None:
        entry.problems.append(
            f"{where}: difficulty: {quoted(item['difficulty'])} is not easy, medium or hard"
        )
        return entry
    entry.data = question_data(
        prompt,
        choices,
        answer,
        f"The answer: {correct}. ({OTDB_SOURCE})",
        kebab(category),
        difficulty,
        "en",
        [],
    )
    return entry


def kebab(text: str, limit: int = TOPIC_MAX) -> str:
    """``Science: Computers`` -> ``science-computers``, cut at a hyphen within `limit`."""
    slug = _NOT_KEBAB.sub("-", text.lower()).strip("-")
    if len(slug) > limit:
        slug = slug[:limit].rsplit("-", 1)[0] if "-" in slug[:limit] else slug[:limit]
    return slug or "trivia"


__all__ = [
    "CSV_COLUMNS",
    "Entry",
    "csv_entries",
    "kebab",
    "otdb_entries",
    "question_data",
    "text_of",
]
