"""`quizbot questions families` and `quizbot questions generate FAMILY`.

`generate` prints a preview in one locale (default), the JSON of `questions list --format
json` plus the family fields, or bank files as YAML (``--out DIR`` writes one file per
question, which `questions validate DIR` accepts). Bad input exits 2 with one message.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Final

import yaml

from bot.bank import question_to_dict
from bot.domain import Locale, choice_letter

EXIT_OK: Final = 0
EXIT_USAGE: Final = 2
COUNT_MAX: Final = 1000


def add_family_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    """Add `families` and `generate` under `quizbot questions`."""
    families = sub.add_parser("families", help="list the families of generated questions")
    families.add_argument("--format", choices=("text", "json"), default="text")
    families.set_defaults(func=run_families)

    generate = sub.add_parser("generate", help="generate questions of one family")
    generate.add_argument("family", help="family id, e.g. request-rounding ('families' lists them)")
    generate.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    generate.add_argument("--count", type=int, default=1, help=f"questions, 1..{COUNT_MAX}")
    generate.add_argument(
        "--locale",
        choices=[str(loc) for loc in Locale],
        default=str(Locale.EN),
        help="locale of the text preview (json and yaml carry both)",
    )
    generate.add_argument("--format", choices=("text", "json", "yaml"), default="text")
    generate.add_argument(
        "--out", type=Path, default=None, help="with --format yaml: write DIR/<id>.yaml files"
    )
    generate.set_defaults(func=run_generate)


def _fail(message: str) -> int:
    print(f"quizbot questions generate: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def run_families(args: argparse.Namespace) -> int:
    from questions.families import default_families

    families = default_families()
    if args.format == "json":
        print(json.dumps([f.summary() for f in families], ensure_ascii=False, indent=2))
        return EXIT_OK
    for f in families:
        low, high = f.difficulty
        levels = f"d{low}" if low == high else f"d{low}-{high}"
        print(f"{f.id:<26} {f.topic:<20} {f.kind:<16} {levels:<5} {f.description}")
    traces = sum(1 for f in families if f.kind == "allocator-trace")
    print(f"{len(families)} families, {traces} of them allocator-trace")
    return EXIT_OK


def run_generate(args: argparse.Namespace) -> int:
    from questions.families import (
        SEED_MAX,
        GenerationError,
        default_families,
        generate,
        generated_to_dict,
    )

    if not 1 <= args.count <= COUNT_MAX:
        return _fail(f"--count {args.count} is out of range; use 1..{COUNT_MAX}")
    if not 0 <= args.seed <= SEED_MAX:
        return _fail(f"--seed {args.seed} is out of range; use 0..{SEED_MAX}")
    if args.out is not None and args.format != "yaml":
        return _fail("--out writes bank files; use it with --format yaml")
    try:
        family = default_families().require(args.family)
    except GenerationError as exc:
        return _fail(str(exc))
    questions = [generate(family, args.seed, i) for i in range(args.count)]
    if args.format == "json":
        data = [generated_to_dict(q) for q in questions]
        print(json.dumps(data, ensure_ascii=False, indent=2))
    elif args.format == "yaml":
        return _write_yaml([question_to_dict(q.question) for q in questions], args.out)
    else:
        for q in questions:
            _print_preview(q, Locale(args.locale))
    return EXIT_OK


def bank_yaml(data: dict[str, Any]) -> str:
    """One question as a bank file."""
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=100)


def _write_yaml(files: list[dict[str, Any]], out: Path | None) -> int:
    if out is None:
        print("---\n".join(bank_yaml(data) for data in files), end="")
        return EXIT_OK
    try:
        out.mkdir(parents=True, exist_ok=True)
        for data in files:
            (out / f"{data['id']}.yaml").write_text(bank_yaml(data), encoding="utf-8")
    except OSError as exc:
        return _fail(f"cannot write to {out} ({exc}); pass a writable directory to --out")
    print(f"{len(files)} questions written to {out}")
    return EXIT_OK


def _print_preview(generated: Any, locale: Locale) -> None:
    q = generated.question
    text = q.text(locale)
    print(f"{q.id}  [family {generated.family} · topic {q.topic} · difficulty {q.difficulty}]")
    print(text.prompt)
    for i, choice in enumerate(text.choices):
        print(f"  {choice_letter(i)}. {choice}")
    numeric = generated.numeric
    typed = ""
    if numeric is not None and numeric.unit == "count":
        typed = f"  (typed: exactly {_plain(numeric.value)})"
    elif numeric is not None:
        typed = f"  (typed: {_plain(numeric.value)} {numeric.unit} ± {numeric.tolerance:g})"
    print(f"Answer: {choice_letter(q.answer)}{typed}")
    print(text.explanation)
    print()


def _plain(value: float) -> str:
    """A number without exponent or trailing zeros: 968192, 19.125."""
    return f"{value:,.6f}".rstrip("0").rstrip(".")
