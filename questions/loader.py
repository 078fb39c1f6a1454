"""Load and validate the question bank (`questions/bank/*.yaml`).

`validate_bank` collects every problem in every file, never stopping at the first; each
message names the file, the question id when it is known, the field, and the fix.
`load_bank` raises `QuestionBankError` with that list, or returns the `QuestionBank`.

Each file is read within bounds (`questions.bounded_yaml`: size, nesting, no aliases), and
whatever it holds is echoed cut short (`bot.quoting`): a hostile file costs one short
problem line, and never stops the check of the other files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from bot.bank import QuestionBank, question_from_dict
from bot.domain import Question
from bot.errors import QuestionBankError
from bot.quoting import cut, quoted
from questions.bounded_yaml import RefusedYamlError, load_question_yaml, parse_question_yaml
from questions.schema import (
    CHOICE_MAX,
    EXPLANATION_MAX,
    FIELDS,
    LOCALES,
    MAX_CHOICES,
    MIN_CHOICES,
    PROMPT_MAX,
    TEXT_FIELDS,
    QuestionFileModel,
    TeamQuestionModel,
)

BANK_DIR = Path(__file__).parent / "bank"
SUFFIX = ".yaml"

_LIMITS = {"prompt": PROMPT_MAX, "choices": CHOICE_MAX, "explanation": EXPLANATION_MAX}
# A file with thousands of unknown keys gets this many lines, then a count.
MAX_PROBLEMS_PER_FILE = 20
_KEBAB_FIX = "use lowercase letters and digits joined by single '-', e.g. 'kv-cache'"


@dataclass(frozen=True, slots=True)
class _FileResult:
    problems: list[str]
    question: Question | None
    qid: str | None = None  # the id as written, when it is a non-empty string


def bank_files(path: Path) -> list[Path]:
    """The question files under `path` (a bank directory or a single file), sorted."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.iterdir() if p.is_file() and p.suffix in (SUFFIX, ".yml"))


def validate_bank(path: Path | None = None) -> list[str]:
    """Every problem of the bank at `path` (default: the packaged bank); [] when it is valid."""
    problems, _ = _check_bank(BANK_DIR if path is None else Path(path))
    return problems


def load_bank(path: Path | None = None) -> QuestionBank:
    """Load the bank at `path` (default: the packaged bank); raise `QuestionBankError`."""
    problems, questions = _check_bank(BANK_DIR if path is None else Path(path))
    if problems:
        raise QuestionBankError(problems)
    return QuestionBank(questions)


def _check_bank(path: Path) -> tuple[list[str], list[Question]]:
    if not path.exists():
        return [f"{path}: the bank path does not exist; pass a directory of *.yaml files"], []
    files = bank_files(path)
    if not files:
        return [f"{path}: no *{SUFFIX} question files found; add one file per question"], []
    problems: list[str] = []
    questions: list[Question] = []
    first_file: dict[str, str] = {}
    for file in files:
        result = _check_file(file)
        problems.extend(result.problems)
        qid = result.qid
        if qid is not None and qid in first_file:
            problems.append(
                f"{file.name} (id {cut(qid)}): id: duplicate id, already used by "
                f"{first_file[qid]}; ids are unique, give this question a new id"
            )
            continue
        if qid is not None:
            first_file[qid] = file.name
        if result.question is not None:
            questions.append(result.question)
    return problems, questions


class _Unreadable(Exception):
    """The file cannot be turned into data; the message is the whole problem."""


def _check_file(file: Path) -> _FileResult:
    try:
        result = _check_document(file, _read(file))
    except _Unreadable as exc:
        return _FileResult([f"{file.name}: {exc}"], None)
    except Exception as exc:  # one hostile file must not stop the check of the others
        return _FileResult(
            [
                f"{file.name}: the file could not be checked ({type(exc).__name__}: "
                f"{cut(str(exc))}); make it a plain question file like the others"
            ],
            None,
        )
    if len(result.problems) > MAX_PROBLEMS_PER_FILE:
        shown = result.problems[:MAX_PROBLEMS_PER_FILE]
        more = len(result.problems) - MAX_PROBLEMS_PER_FILE
        shown.append(f"{file.name}: {more} more problems in this file; fix the ones above first")
        return _FileResult(shown, None, result.qid)
    return result


def _read(file: Path) -> Any:
    return _readable(lambda: load_question_yaml(file))


def read_question_text(text: str) -> tuple[Any, str | None]:
    """A question file's text (an upload) as data, within the same bounds as a bank file;
    else the one line that says why it cannot be read."""
    try:
        return _readable(lambda: parse_question_yaml(text)), None
    except _Unreadable as exc:
        return None, str(exc)


def _readable(load: Callable[[], Any]) -> Any:
    try:
        return load()
    except RefusedYamlError as exc:
        raise _Unreadable(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _Unreadable(f"cannot read the file ({cut(str(exc))}); save it as UTF-8") from None
    except yaml.YAMLError as exc:
        raise _Unreadable(_yaml_error(exc)) from None
    except (ValueError, OverflowError, RecursionError) as exc:
        raise _Unreadable(
            f"a value cannot be read ({cut(str(exc))}); quote dates and very long numbers"
        ) from None


def check_question_file(
    name: str, text: str, *, team: bool = False
) -> tuple[list[str], Question | None]:
    """One uploaded question file (its name and text), checked as the bank checks a file."""
    data, unreadable = read_question_text(text)
    if unreadable is not None:
        return [f"{Path(name).name}: {unreadable}"], None
    result = _check_document(Path(name), data, team)
    return result.problems, result.question


def _check_document(file: Path, data: Any, team: bool = False) -> _FileResult:
    name = file.name
    if data is None:
        return _FileResult([f"{name}: the file is empty; write one question as a mapping"], None)
    if not isinstance(data, dict):
        kind = type(data).__name__
        return _FileResult(
            [
                f"{name}: the document is a {kind}, not a mapping; write 'key: value' "
                f"lines (id, topic, difficulty, answer, references, en, el)"
            ],
            None,
        )
    return _check_data(data, file, team)


def validate_question(
    data: dict[str, Any], file_name: str | None = None, *, team: bool = False
) -> list[str]:
    """Every problem of one question given as plain data (a bank file's shape), exactly as
    the bank validator reports them for a file `file_name` (default ``<id>.yaml``).
    `team`: a team question's rules (one locale is enough, references are optional)."""
    return check_question(data, file_name, team=team)[0]


def check_question(
    data: dict[str, Any], file_name: str | None = None, *, team: bool = False
) -> tuple[list[str], Question | None]:
    """`validate_question`, with the question itself when there is no problem."""
    if file_name is None:
        file_name = f"{data.get('id')}{SUFFIX}"
    result = _check_data(data, Path(file_name), team)
    return result.problems, result.question


def _check_data(data: dict[Any, Any], file: Path, team: bool = False) -> _FileResult:
    name = file.name
    qid = data.get("id") if isinstance(data.get("id"), str) and data.get("id") else None
    where = f"{name} (id {cut(qid)})" if qid else name
    problems: list[str] = []
    if file.suffix != SUFFIX:
        problems.append(f"{where}: file name: rename it to end in {SUFFIX}")
    schema = TeamQuestionModel if team else QuestionFileModel
    try:
        model: QuestionFileModel | None = schema.model_validate(data)
    except ValidationError as exc:
        model = None
        problems.extend(f"{where}: {_describe(err)}" for err in exc.errors())
    problems.extend(f"{where}: {p}" for p in _cross_field_problems(data, file))
    if team and all(data.get(loc) is None for loc in LOCALES):
        problems.append(
            f"{where}: en: no wording; write the question under en: (or el:) with prompt, "
            f"choices and explanation"
        )
    if problems or model is None:
        return _FileResult(problems, None, qid)
    return _FileResult([], question_from_dict(normalized_dict(model)), qid)


def normalized_dict(model: QuestionFileModel) -> dict[str, Any]:
    """The validated file as plain data, the `bot.bank.question_to_dict` shape."""
    data = model.model_dump()
    if not data["inputs"]:
        del data["inputs"]
    for loc in LOCALES:
        if data.get(loc) is None:
            data.pop(loc, None)  # a team question written in one locale
    return data


def _yaml_error(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = cut(getattr(exc, "problem", None) or str(exc), 200)
    context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and context_mark is not None and context_mark is not mark:
        # The scanner notices an unclosed quote or bracket late; say where it began.
        problem = f"{problem} ({context} at line {context_mark.line + 1})"
    return (
        f"{where}YAML syntax error: {problem}; fix the YAML "
        f"(quote text that contains ': ' or starts with a special character)"
    )


def _cross_field_problems(data: dict[Any, Any], file: Path) -> Iterator[str]:
    qid = data.get("id")
    if isinstance(qid, str) and qid and file.stem != qid:
        yield (
            f"id: the file name {file.name} does not match the id; rename the file to "
            f"{cut(qid)}{SUFFIX} (ids are never renamed once shipped)"
        )
    counts: dict[str, int] = {}
    for loc in LOCALES:
        text = data.get(loc)
        if isinstance(text, dict) and isinstance(text.get("choices"), list):
            counts[loc] = len(text["choices"])
            yield from _duplicate_choices(loc, text["choices"])
    if len(set(counts.values())) > 1:
        shown = ", ".join(f"{loc} has {n}" for loc, n in counts.items())
        yield (
            f"el.choices: the locales have different choice counts ({shown}); every locale "
            f"lists the same choices in the same order"
        )
    answer = data.get("answer")
    if isinstance(answer, int) and not isinstance(answer, bool) and answer >= 0:
        for loc, n in counts.items():
            if n >= MIN_CHOICES and answer >= n:
                yield (
                    f"answer: answer {quoted(answer)} is out of range for {loc}.choices "
                    f"({n} choices; answer is a 0-based index 0..{n - 1})"
                )
                break


def _duplicate_choices(loc: str, choices: list[Any]) -> Iterator[str]:
    seen: dict[str, int] = {}
    for i, choice in enumerate(choices):
        if not isinstance(choice, str) or not choice.strip():
            continue
        key = " ".join(choice.split()).casefold()
        if key in seen:
            yield (
                f"{loc}.choices[{i}]: same text as {loc}.choices[{seen[key]}]; "
                f"every choice must differ"
            )
        else:
            seen[key] = i


def _field(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "(document)"


def _describe(err: ErrorDetails) -> str:
    """A pydantic error as '<field>: <what is wrong>; <the fix>'."""
    loc = tuple(err["loc"])
    field = cut(_field(loc))
    kind = err["type"]
    value = err["input"]
    ctx = err.get("ctx") or {}
    last = loc[-1] if loc else ""
    if kind == "missing":
        if last in LOCALES:
            return (
                f"{field}: the {last} locale is missing; both en and el are required, add "
                f"{last}: with prompt, choices and explanation"
            )
        return f"{field}: required field is missing; add it"
    if kind == "extra_forbidden":
        allowed = ", ".join(TEXT_FIELDS if len(loc) > 1 else FIELDS)
        return f"{field}: unknown key; remove it or fix its spelling (allowed: {allowed})"
    if kind in ("string_too_short", "string_pattern_mismatch") and (
        isinstance(value, str) and not value.strip()
    ):
        return f"{field}: must not be empty; write the text"
    if kind == "string_too_long":
        limit = ctx.get("max_length", _LIMITS.get(_text_kind(loc), 0))
        length = len(value.strip()) if isinstance(value, str) else "?"
        return f"{field}: {length} characters, the limit is {limit}; shorten it"
    if kind == "string_pattern_mismatch":
        if last == "references" or (len(loc) > 1 and loc[0] == "references"):
            return (
                f"{field}: {quoted(value)} is not an https:// link; link the primary source "
                f"(PyTorch docs or source, CUDA docs, vLLM docs, the paper)"
            )
        return f"{field}: {quoted(value)} is not kebab-case; {_KEBAB_FIX}"
    if kind in ("greater_than_equal", "less_than_equal") and last == "difficulty":
        return (
            f"{field}: difficulty {quoted(value)} is outside 1..3; use 1 (knows the concept), "
            f"2 (has used the API) or 3 (reasons about numbers)"
        )
    if kind == "greater_than_equal" and last == "answer":
        return f"{field}: answer {quoted(value)} is negative; answer is a 0-based choice index"
    if kind in ("too_short", "too_long"):
        if last == "references":
            return f"{field}: no reference; add at least one link to primary documentation"
        n = ctx.get("actual_length", "?")
        return (
            f"{field}: {n} choices; a question has {MIN_CHOICES}..{MAX_CHOICES} choices "
            f"(4 for this bank)"
        )
    if kind == "int_type":
        return f"{field}: expected a whole number, got {quoted(value)}; write it without quotes"
    if kind == "string_type":
        return f"{field}: expected text, got {quoted(value)}; put the text in quotes"
    if kind == "list_type":
        return f"{field}: expected a list, got {type(value).__name__}; write ['...', '...']"
    if kind in ("model_type", "dict_type"):
        return f"{field}: expected a mapping of keys, got {type(value).__name__}; fix the nesting"
    if kind == "invalid-json-value":
        return (
            f"{field}: {quoted(value)} is not plain data; inputs hold numbers, text, booleans, "
            f"lists and mappings only (quote dates)"
        )
    return f"{field}: {cut(err['msg'])}; fix the value {quoted(value)}"


def _text_kind(loc: tuple[int | str, ...]) -> str:
    for part in reversed(loc):
        if isinstance(part, str):
            return part
    return ""
