"""`quizbot questions import|export` and `questions list --workspace`: a workspace's team
pack from the command line (`questions.cli` adds them). The database is the bot's
(QUIZBOT_DATABASE_URL), opened through the composition root.

Every file is read and validated before anything is stored; each file's valid questions
then go in one transaction. Problems go to stderr, one per line with where and the fix;
the exit status is 1 when there was any.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from bot.team import Origin, SubmissionState, TeamQuestion, Workspace
from questions.team import TeamQuestions, export_csv, export_yaml

EXIT_OK, EXIT_PROBLEMS = 0, 1
WORKSPACE_HELP = "the team pack's workspace: slack:<team id>, discord:<guild id> or console"


StoreOpener = Callable[[], AbstractAsyncContextManager[Any]]
"""Opens the configured database (the composition root's `open_store`)."""


def add_team_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], open_store: StoreOpener
) -> None:
    imp = sub.add_parser(
        "import",
        help="import bank YAML, CSV or Open Trivia DB JSON into a workspace's team pack",
    )
    imp.add_argument("path", type=Path, help="a file, or a directory of .yaml/.csv/.json files")
    imp.add_argument("--workspace", required=True, help=WORKSPACE_HELP)
    imp.add_argument(
        "--approve", action="store_true", help="add them approved (default: waiting for review)"
    )
    imp.set_defaults(func=lambda args: run_import(args, open_store))

    exp = sub.add_parser("export", help="write a workspace's approved team questions")
    exp.add_argument("--workspace", required=True, help=WORKSPACE_HELP)
    exp.add_argument("--format", choices=("yaml", "csv"), default="yaml")
    exp.add_argument(
        "--out",
        type=Path,
        default=Path("."),
        help="directory: one <id>.yaml per question, or questions.csv (default: here)",
    )
    exp.set_defaults(func=lambda args: run_export(args, open_store))


def run_import(args: argparse.Namespace, open_store: StoreOpener) -> int:
    workspace = Workspace.parse(args.workspace)
    reader = TeamQuestions()
    files = list(reader.read_path(args.path))  # all read and checked before any write

    async def store_all() -> list[list[TeamQuestion]]:
        async with open_store() as store:
            return [
                await store.team.add(
                    workspace,
                    read.questions,
                    origin=Origin.IMPORT,
                    approved=args.approve,
                    now=store.clock.now(),
                )
                for _, read in files
            ]

    added = asyncio.run(store_all())
    problems = 0
    for (name, read), new in zip(files, added, strict=True):
        for line in read.problems:
            print(
                f"{name}: {line}" if not line.startswith(Path(name).name) else line, file=sys.stderr
            )
        problems += len(read.problems)
        print(
            f"{name}: {len(new)} added, {len(read.questions) - len(new)} already in the pack, "
            f"{len(read.problems)} with problems ({read.entries} entries)"
        )
    state = "approved" if args.approve else "waiting for review (/quiz review)"
    print(f"{sum(len(a) for a in added)} questions added to {workspace.key}, {state}")
    if problems:
        print(
            f"{problems} problems; fix them and import again (nothing is added twice)",
            file=sys.stderr,
        )
    return EXIT_PROBLEMS if problems else EXIT_OK


async def _pack(
    workspace: Workspace, open_store: StoreOpener
) -> tuple[list[TeamQuestion], frozenset[str]]:
    async with open_store() as store:
        listing = await store.team.listing(workspace)
        state = await store.team.state(workspace)
    return listing, state.retired


def run_export(args: argparse.Namespace, open_store: StoreOpener) -> int:
    workspace = Workspace.parse(args.workspace)
    listing, retired = asyncio.run(_pack(workspace, open_store))
    questions = [
        t.question
        for t in listing
        if t.state is SubmissionState.APPROVED and t.question.id not in retired
    ]
    if args.format == "yaml":
        written = export_yaml(questions, args.out)
        print(f"wrote {len(written)} question files to {args.out}")
        return EXIT_OK
    text, notes = export_csv(questions)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "questions.csv"
    path.write_text(text, encoding="utf-8")
    for note in notes:
        print(note, file=sys.stderr)
    print(f"wrote {len(questions)} questions to {path}")
    return EXIT_OK


def run_team_list(args: argparse.Namespace, open_store: StoreOpener) -> int:
    workspace = Workspace.parse(args.workspace)
    listing, retired = asyncio.run(_pack(workspace, open_store))
    rows = [listed(t, t.question.id in retired) for t in listing]
    if args.format == "json":
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return EXIT_OK
    for r in rows:
        print(
            f"{r['id']:<18} {r['state']:<9} {r['topic']:<20} d{r['difficulty']}  {r['prompt'][:60]}"
        )
    print(f"{len(rows)} team questions in {workspace.key}")
    return EXIT_OK


def listed(t: TeamQuestion, retired: bool) -> dict[str, Any]:
    q = t.question
    return {
        "id": q.id,
        "hash": q.content_hash,
        "number": t.id,
        "state": str(t.state),
        "retired": retired,
        "origin": str(t.origin),
        "topic": q.topic,
        "difficulty": q.difficulty,
        "locales": [loc.value for loc in q.locales],
        "prompt": q.text(q.locales[0]).prompt,
        "author": t.author.key if t.author is not None else None,
        "created_at": t.created_at.isoformat(),
        "decided_at": t.decided_at.isoformat() if t.decided_at else None,
        "reason": t.reason,
    }


__all__ = ["add_team_commands", "run_export", "run_import", "run_team_list"]
