"""Team questions through the bank's validator: `TeamQuestions` is the core's
`QuestionChecker` (a form's question) and `QuestionFileReader` (bank YAML, CSV, Open
Trivia DB JSON), and `export_yaml`/`export_csv` write what `read` reads back.

The validator is the bank's (`questions.loader`: same limits, same messages) with the
team rules: one locale is enough, references are optional. A valid question gets its team
id (`bot.team.team_question`): the same content has the same id and content hash in every
workspace and every import, so importing a file twice adds nothing.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from bot.bank import question_to_dict
from bot.csv_cells import guarded_row
from bot.domain import Locale, Question, choice_letter
from bot.errors import UserFacingError
from bot.quoting import cut
from bot.team import ReadQuestions, team_question
from questions.bounded_yaml import MAX_FILE_BYTES as YAML_MAX_BYTES
from questions.loader import SUFFIX, check_question, check_question_file
from questions.tabular import (
    CHOICE_COLUMNS,
    CSV_COLUMNS,
    PLACEHOLDER_ID,
    Entry,
    csv_entries,
    otdb_entries,
    text_of,
)

FORMATS: Final = {SUFFIX: "bank YAML", ".csv": "CSV", ".json": "Open Trivia DB JSON"}
# Per format, checked before a file is read: a question file is a few KB (the bank's own
# bound); 8 MiB of CSV is some 20,000 rows; Open Trivia DB answers 50 questions a call,
# and a JSON document expands several times in memory.
MAX_BYTES: Final = {SUFFIX: YAML_MAX_BYTES, ".csv": 8 * 1024 * 1024, ".json": 2 * 1024 * 1024}
MAX_FILES: Final = 10_000


class TeamQuestions:
    """The core's checker and file reader for team questions."""

    def write_csv(self, questions: Iterable[Question]) -> tuple[str, list[str]]:
        """`export_csv`, for the core (the dashboard's export)."""
        return export_csv(questions)

    def check(self, data: Mapping[str, Any]) -> tuple[list[str], Question | None]:
        problems, question = check_question(dict(data), f"{PLACEHOLDER_ID}{SUFFIX}", team=True)
        if problems or question is None:
            return [_unprefixed(p) for p in problems], None
        return [], team_question(question_to_dict(question))

    def accepts(self, name: str) -> bool:
        return Path(name).suffix.lower() in FORMATS

    def read(self, name: str, data: bytes) -> ReadQuestions:
        kind = Path(name).suffix.lower()
        if kind not in FORMATS:
            raise UserFacingError(
                f"{cut(name)}: not a question file; send bank YAML (.yaml), CSV (.csv) or "
                "Open Trivia DB JSON (.json)"
            )
        if len(data) > MAX_BYTES[kind]:
            raise UserFacingError(too_big(name, len(data), MAX_BYTES[kind]))
        text = text_of(name, data)
        if kind == SUFFIX:
            problems, question = check_question_file(Path(name).name, text, team=True)
            if question is None:
                return ReadQuestions((), tuple(problems), 1)
            return ReadQuestions((team_question(question_to_dict(question)),), (), 1)
        entries = csv_entries(name, text) if kind == ".csv" else otdb_entries(name, text)
        return self._validated(entries)

    def _validated(self, entries: Iterable[Entry]) -> ReadQuestions:
        questions: list[Question] = []
        problems: list[str] = []
        count = 0
        for entry in entries:
            count += 1
            if entry.problems:
                problems += entry.problems
                continue
            found, question = self.check(entry.data)
            problems += [f"{entry.where}: {p}" for p in found]
            if question is not None:
                questions.append(question)
        return ReadQuestions(tuple(questions), tuple(problems), count)

    def read_path(self, path: Path) -> Iterator[tuple[str, ReadQuestions]]:
        """A file, or every question file of a directory (sorted), each read in turn."""
        if not path.exists():
            raise UserFacingError(f"{path}: no such file or directory")
        files = (
            [path]
            if path.is_file()
            else sorted(p for p in path.iterdir() if p.is_file() and self.accepts(p.name))
        )
        if not files:
            raise UserFacingError(f"{path}: no .yaml, .csv or .json question files in it")
        if len(files) > MAX_FILES:
            raise UserFacingError(
                f"{path}: {len(files):,} files, over {MAX_FILES:,}; split the directory"
            )
        for file in files:
            try:
                size, limit = file.stat().st_size, MAX_BYTES[file.suffix.lower()]
                if size > limit:  # refused before it is read
                    raise UserFacingError(too_big(file.name, size, limit))
                yield str(file), self.read(file.name, file.read_bytes())
            except UserFacingError as exc:  # one refused file does not stop the others
                yield str(file), ReadQuestions((), (str(exc),), 0)


def too_big(name: str, size: int, limit: int) -> str:
    kind = FORMATS[Path(name).suffix.lower()]
    return (
        f"{cut(name)} is {size / 1e6:.1f} MB, over the {limit / (1024 * 1024):g} MiB limit for "
        f"{kind} files; split it into smaller files"
    )


def _unprefixed(problem: str) -> str:
    """A validator line without the file it names (a form has no file)."""
    head = f"{PLACEHOLDER_ID}{SUFFIX} (id {PLACEHOLDER_ID}): "
    return problem.removeprefix(head).removeprefix(f"{PLACEHOLDER_ID}{SUFFIX}: ")


# -- export ----------------------------------------------------------------------------


def export_yaml(questions: Iterable[Question], out: Path) -> list[Path]:
    """One bank file per question (``<id>.yaml``) under `out`: what import reads back."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for q in questions:
        data = question_to_dict(q)
        if data.get("demo") is None:
            del data["demo"]
        path = out / f"{q.id}{SUFFIX}"
        path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=100))
        written.append(path)
    return written


def export_csv(questions: Iterable[Question]) -> tuple[str, list[str]]:
    """The questions as CSV (one locale per row) and a note per question CSV cannot hold
    whole (a second locale, a demo, inputs: YAML keeps them)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    notes = []
    for q in questions:
        locale = Locale.EN if Locale.EN in q.texts else q.locales[0]
        if len(q.locales) > 1 or q.demo or q.inputs:
            notes.append(
                f"{q.id}: CSV keeps its {locale.value} text only (no second locale, demo or "
                "inputs); use --format yaml to keep them"
            )
        text = q.texts[locale]
        choices = [*text.choices, *[""] * (len(CHOICE_COLUMNS) - len(text.choices))]
        writer.writerow(
            guarded_row(
                [
                    text.prompt,
                    *choices,
                    choice_letter(q.answer),
                    text.explanation,
                    q.topic,
                    q.difficulty,
                    locale.value,
                    " ".join(q.references),
                ]
            )
        )
    return buf.getvalue(), notes


__all__ = ["FORMATS", "MAX_BYTES", "TeamQuestions", "export_csv", "export_yaml", "too_big"]
