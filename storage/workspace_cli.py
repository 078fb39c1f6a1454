"""`quizbot workspace forget <platform>:<workspace>`: erase a workspace on request (an
operator command, `bot/cli.py` calls `add_workspace_commands(subparsers)`).

Every member of the workspace is erased as `quizbot member forget` erases one
(`storage.members`: answers, scores, practice; boards recomputed; submissions and reports
kept without their name), the schedules of its channels are turned off, and its Slack
installs (tokens, installer) are deleted. Run it after the workspace uninstalled the app:
a workspace that is still installed keeps working, with nobody on its boards.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass

from sqlalchemy import select

from bot.domain import ChannelRef, Platform, UserRef
from bot.errors import UserFacingError
from storage.members import TOMBSTONE
from storage.models import ChannelRow, MemberRow
from storage.report import StoreOpener


@dataclass(frozen=True, slots=True)
class WorkspaceForgotten:
    members: int = 0
    answers: int = 0
    schedules: int = 0
    installs: int = 0


def add_workspace_commands(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], open_store: StoreOpener
) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("workspace", help="a workspace's data: erase it on request")
    sub = parser.add_subparsers(dest="workspace_command", metavar="ACTION", required=True)
    forget = sub.add_parser(
        "forget",
        help="erase a workspace: every member's answers, scores and practice, its schedules "
        "off, its Slack installs (tokens) deleted",
    )
    forget.add_argument("workspace", help="slack:T0123 (platform:workspace id)")
    forget.set_defaults(func=lambda args: run_forget(args, open_store))
    return parser


def _workspace(text: str) -> tuple[Platform, str]:
    parts = text.split(":")
    try:
        platform = Platform(parts[0])
    except ValueError:
        platform = None
    if platform is None or len(parts) != 2 or not parts[1]:
        raise UserFacingError(
            f"{text[:60]!r} is not a workspace: write platform:workspace id (slack:T0123)"
        )
    return platform, parts[1]


async def forget_workspace(store: object, platform: Platform, workspace: str) -> WorkspaceForgotten:
    """Erase `workspace` in `store` (a `storage.store.SqlStore`)."""
    from storage.store import SqlStore

    assert isinstance(store, SqlStore)
    async with store.sessions() as s:
        users = list(
            (
                await s.execute(
                    select(MemberRow.user_id).where(
                        MemberRow.platform == str(platform),
                        MemberRow.workspace == workspace,
                        MemberRow.user_id.not_like(TOMBSTONE.format(id="%")),  # erased already
                    )
                )
            ).scalars()
        )
        channels = list(
            (
                await s.execute(
                    select(ChannelRow.channel).where(
                        ChannelRow.platform == str(platform), ChannelRow.workspace == workspace
                    )
                )
            ).scalars()
        )
    members = answers = schedules = 0
    for user in users:
        done = await store.members.forget(UserRef(platform, workspace, user))
        members += done.members
        answers += done.answers
    for channel in channels:
        schedules += len(await store.schedules.disable(ChannelRef(platform, workspace, channel)))
    installs = await store.slack_installs.forget(workspace) if platform is Platform.SLACK else 0
    return WorkspaceForgotten(members, answers, schedules, installs)


def run_forget(args: argparse.Namespace, open_store: StoreOpener) -> int:
    platform, workspace = _workspace(args.workspace)

    async def run() -> WorkspaceForgotten:
        async with open_store() as store:
            return await forget_workspace(store, platform, workspace)

    done = asyncio.run(run())
    if not (done.members or done.schedules or done.installs):
        print(f"nothing is stored for {args.workspace}: nothing to erase", file=sys.stderr)
        return 1
    print(
        f"{platform}:{workspace} erased: {done.members} members ({done.answers} answers), "
        f"{done.schedules} schedules turned off, {done.installs} Slack installs deleted; "
        "boards recomputed"
    )
    return 0


__all__ = ["WorkspaceForgotten", "add_workspace_commands", "forget_workspace"]
