"""`quizbot questions ...`: validate, list, show, count and lint the bank; import, export
and list a workspace's team pack (`questions.team_cli`).

`bot/cli.py` calls `add_questions_commands(subparsers)`; each subcommand sets
`func(args) -> int` (the exit status). Results go to stdout, problems to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from bot.bank import QuestionBank, question_to_dict
from bot.domain import Locale, choice_letter
from bot.errors import QuestionBankError
from questions import PYTORCH_VERSION
from questions.families.cli import add_family_commands
from questions.lint import (
    LIMITED_POSITIONS,
    LONGEST_SHARE_MAX,
    POSITION_SHARE_MAX,
    POSITION_SHARE_MIN,
    LintReport,
    lint_bank,
    locales_of,
)
from questions.loader import BANK_DIR, load_bank, validate_bank
from questions.team_cli import StoreOpener, add_team_commands, run_team_list

EXIT_OK = 0
EXIT_PROBLEMS = 1


def add_questions_commands(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], open_store: StoreOpener
) -> argparse.ArgumentParser:
    """Add `questions {validate,list,show,stats,lint,families,generate}` to the parser."""
    parser = subparsers.add_parser("questions", help="validate and browse the question bank")
    parser.set_defaults(func=lambda _args: _usage(parser))
    sub = parser.add_subparsers(dest="questions_command", metavar="COMMAND")

    validate = sub.add_parser("validate", help="check every bank file, report every problem")
    validate.add_argument(
        "path", nargs="?", type=Path, default=None, help=f"bank directory (default {BANK_DIR})"
    )
    validate.set_defaults(func=run_validate)

    list_ = sub.add_parser("list", help="list the questions (text or JSON)")
    list_.add_argument("--format", choices=("text", "json"), default="text")
    list_.add_argument(
        "--workspace",
        default=None,
        help="list this workspace's team pack instead (slack:<team id>, discord:<guild id>, "
        "console)",
    )
    _add_path(list_)
    list_.set_defaults(func=lambda args: run_list(args, open_store))

    show = sub.add_parser("show", help="show one question with its answer")
    show.add_argument("id", help="question id, e.g. fragmentation-what-is-it")
    show.add_argument("--locale", choices=[str(loc) for loc in Locale], default=str(Locale.EN))
    _add_path(show)
    show.set_defaults(func=_on_bank(run_show))

    stats = sub.add_parser("stats", help="count questions per topic, difficulty and locale")
    stats.add_argument("--format", choices=("text", "json"), default="text")
    _add_path(stats)
    stats.set_defaults(func=_on_bank(run_stats))

    lint = sub.add_parser(
        "lint",
        help="does the choices' form give the answer away? exit 1 when a bank-wide limit breaks",
    )
    lint.add_argument(
        "path", nargs="?", type=Path, default=None, help=f"bank directory (default {BANK_DIR})"
    )
    lint.add_argument("--format", choices=("text", "json"), default="text")
    lint.set_defaults(func=_on_bank(run_lint))
    add_family_commands(sub)
    add_team_commands(sub, open_store)
    return parser


def _add_path(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--path", type=Path, default=None, help=f"bank directory (default {BANK_DIR})"
    )


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _load(path: Path | None) -> QuestionBank | None:
    try:
        return load_bank(path)
    except QuestionBankError as exc:
        _print_problems(exc.problems)
        return None


def _on_bank(
    run: Callable[[argparse.Namespace, QuestionBank], int],
) -> Callable[[argparse.Namespace], int]:
    """`run` on the bank at `args.path`; when it does not load, its problems and exit 1."""

    def load_and_run(args: argparse.Namespace) -> int:
        bank = _load(args.path)
        return EXIT_PROBLEMS if bank is None else run(args, bank)

    return load_and_run


def _print_problems(problems: list[str]) -> None:
    for problem in problems:
        print(problem, file=sys.stderr)
    noun, pronoun = ("problem", "it") if len(problems) == 1 else ("problems", "them")
    print(
        f"{len(problems)} {noun}; fix {pronoun} and run 'questions validate' again",
        file=sys.stderr,
    )


def run_validate(args: argparse.Namespace) -> int:
    problems = validate_bank(args.path)
    if problems:
        _print_problems(problems)
        return EXIT_PROBLEMS
    bank = load_bank(args.path)
    print(f"{len(bank)} questions OK")
    return EXIT_OK


def run_list(args: argparse.Namespace, open_store: StoreOpener) -> int:
    if args.workspace is not None:
        return run_team_list(args, open_store)
    bank = _load(args.path)
    if bank is None:
        return EXIT_PROBLEMS
    if args.format == "json":
        print(json.dumps([question_to_dict(q) for q in bank], ensure_ascii=False, indent=2))
        return EXIT_OK
    for q in bank:
        demo = q.demo or "-"
        print(f"{q.id:<45} {q.topic:<20} d{q.difficulty}  demo {demo}")
    print(f"{len(bank)} questions")
    return EXIT_OK


def run_show(args: argparse.Namespace, bank: QuestionBank) -> int:
    q = bank.get(args.id)
    if q is None:
        print(
            f"no question with id {args.id!r}; 'questions list' shows the {len(bank)} ids",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    locale = Locale(args.locale)
    text = q.text(locale)
    print(f"{q.id}  [topic {q.topic} · difficulty {q.difficulty} · demo {q.demo or '-'}]")
    print()
    print(text.prompt)
    for choice in q.choices(locale):
        print(f"  {choice.letter}. {choice.text}")
    print()
    print(f"Answer: {choice_letter(q.answer)}")
    print(text.explanation)
    print()
    print("References:")
    for ref in q.references:
        print(f"  - {ref}")
    return EXIT_OK


def bank_stats(bank: QuestionBank) -> dict[str, dict[str, int]]:
    """Question counts per topic, difficulty and locale, each with a `total`."""
    topics = Counter(q.topic for q in bank)
    difficulties = Counter(str(q.difficulty) for q in bank)
    locales = Counter(str(loc) for q in bank for loc in q.texts)
    out: dict[str, dict[str, int]] = {}
    for name, counter in (("topic", topics), ("difficulty", difficulties), ("locale", locales)):
        out[name] = dict(sorted(counter.items()))
    out["total"] = {"questions": len(bank), "topics": len(topics), "demos": len(bank.demos())}
    return out


def run_stats(args: argparse.Namespace, bank: QuestionBank) -> int:
    stats = bank_stats(bank)
    if args.format == "json":
        print(json.dumps({"pytorch": PYTORCH_VERSION, **stats}, ensure_ascii=False, indent=2))
        return EXIT_OK
    print(f"describes PyTorch {PYTORCH_VERSION}")
    for name in ("topic", "difficulty", "locale"):
        print(f"per {name}:")
        for key, n in stats[name].items():
            print(f"  {key:<24} {n:>4}")
        # Every question has every locale, so a locale total would count questions twice.
        total = len(bank) if name == "locale" else sum(stats[name].values())
        label = "questions" if name == "locale" else "total"
        print(f"  {label:<24} {total:>4}")
    totals = stats["total"]
    print(
        f"total: {totals['questions']} questions, {totals['topics']} topics, "
        f"{totals['demos']} demos"
    )
    return EXIT_OK


def run_lint(args: argparse.Namespace, bank: QuestionBank) -> int:
    report = lint_bank(bank)
    breaches = report.breaches()
    if args.format == "json":
        print(json.dumps(_lint_json(report, breaches), ensure_ascii=False, indent=2))
    else:
        _print_lint(report)
    for breach in breaches:
        print(f"bank-wide limit broken: {breach}", file=sys.stderr)
    return EXIT_PROBLEMS if breaches else EXIT_OK


def _print_lint(report: LintReport) -> None:
    n = report.questions
    longest = ", ".join(
        f"{loc} {report.longest[loc]}/{n} ({report.longest_share(loc):.1%})"
        for loc in locales_of(report)
    )
    print(f"{n} questions")
    print(f"correct choice uniquely longest: {longest} (limit {LONGEST_SHARE_MAX:.0%} per locale)")
    letters = sorted(set(report.positions) | {choice_letter(i) for i in range(LIMITED_POSITIONS)})
    spread = ", ".join(
        f"{letter} {report.positions.get(letter, 0)} ({report.position_share(letter):.1%})"
        for letter in letters
    )
    print(
        f"answer positions: {spread} (each of A-D within "
        f"{POSITION_SHARE_MIN:.0%}-{POSITION_SHARE_MAX:.0%})"
    )
    for finding in report.findings:
        print(f"warning: {finding}")
    count = len(report.findings)
    print(f"{count} warning{'' if count == 1 else 's'}")


def _lint_json(report: LintReport, breaches: list[str]) -> dict[str, object]:
    return {
        "questions": report.questions,
        "longest": {loc: report.longest[loc] for loc in locales_of(report)},
        "longest_share": {loc: report.longest_share(loc) for loc in locales_of(report)},
        "positions": dict(sorted(report.positions.items())),
        "warnings": [str(f) for f in report.findings],
        "breaches": breaches,
    }
