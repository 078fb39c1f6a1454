"""`quizbot member export|forget`: a member's personal data for operators (`bot/cli.py`
calls `add_member_commands(subparsers)`); the same erasure as `/quiz forget-me`
(`storage.members`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from bot.domain import Platform, UserRef
from bot.errors import UserFacingError
from bot.mydata import Forgotten
from storage.members import SqlMemberData
from storage.report import StoreOpener


def add_member_commands(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], open_store: StoreOpener
) -> argparse.ArgumentParser:
    """Add `member export|forget <platform>:[<workspace>:]<user id>` (`bot/cli.py`)."""
    parser = subparsers.add_parser("member", help="a member's personal data: export or erase it")
    sub = parser.add_subparsers(dest="member_command", metavar="ACTION", required=True)
    exp = sub.add_parser("export", help="print everything stored about a member, as JSON")
    exp.add_argument("who", help="slack:T0123:U0456 (platform:workspace:user)")
    exp.set_defaults(func=lambda args: run_export(args, open_store))
    forget = sub.add_parser(
        "forget",
        help="erase a member: answers, scores, practice; boards recomputed; submissions kept "
        "without their name",
    )
    forget.add_argument(
        "who", help="slack:U0456 (every workspace) or slack:T0123:U0456 (one workspace)"
    )
    forget.set_defaults(func=lambda args: run_forget(args, open_store))
    return parser


def _who(text: str) -> tuple[Platform, str | None, str]:
    parts = text.split(":")
    try:
        platform = Platform(parts[0])
    except ValueError:
        platform = None
    if platform is None or len(parts) not in (2, 3) or not all(parts):
        raise UserFacingError(
            f"{text[:60]!r} is not a member: write platform:user id (slack:U0456) or "
            "platform:workspace:user id (slack:T0123:U0456)"
        )
    return platform, parts[1] if len(parts) == 3 else None, parts[-1]


def run_export(args: argparse.Namespace, open_store: StoreOpener) -> int:
    platform, workspace, user = _who(args.who)
    if workspace is None:
        raise UserFacingError("export needs the workspace too, e.g. slack:T0123:U0456")

    async def run() -> dict[str, Any]:
        async with open_store() as store:
            data: dict[str, Any] = await store.members.export(UserRef(platform, workspace, user))
            return data

    print(json.dumps(asyncio.run(run()), ensure_ascii=False, indent=2, sort_keys=True, default=str))
    return 0


def run_forget(args: argparse.Namespace, open_store: StoreOpener) -> int:
    platform, workspace, user = _who(args.who)

    async def run() -> list[tuple[str, Forgotten]]:
        async with open_store() as store:
            members: SqlMemberData = store.members
            if workspace is not None:
                return [(workspace, await members.forget(UserRef(platform, workspace, user)))]
            return await members.forget_everywhere(str(platform), user)

    done = [(ws, f) for ws, f in asyncio.run(run()) if f.members]
    if not done:
        print(f"no member {args.who} is stored: nothing to erase", file=sys.stderr)
        return 1
    for ws, f in done:
        print(
            f"{platform}:{ws}:{user} erased: {f.answers} answers, {f.practice_cards} practice "
            f"cards; {f.submissions} submitted questions and {f.flags} reports kept without "
            "their name; boards recomputed"
        )
    return 0


__all__ = ["add_member_commands"]
