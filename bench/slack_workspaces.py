"""Many workspaces: 100 workspaces installed through OAuth (multi-workspace mode), 1,000
signed clicks spread over them (10 per workspace, interleaved) fired at once at the
HTTP-mode Slack app, each workspace answering its own open question; every outcome and
every post goes out with the token of the workspace it concerns.

    .venv/bin/python bench/slack_workspaces.py [--workspaces 100] [--users 1000]
        [--db sqlite|postgresql|both] [--repeats 3]

The single-workspace figure is `bench/slack_ack.py`'s (its processes and burst, reused),
measured in the same run on the same database, so the comparison holds on a noisy machine.
Three processes, as there: the fake Slack (every workspace's token belongs to its team;
a call with another workspace's token is refused and counted), the bot, the client.

Targets: ack p99 within 10 % of the single-workspace p99 (keep-alive bursts, the median of
`--repeats`), every answer stored, 0 calls with another workspace's token.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import sys
import tempfile
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from bench import slack_ack
from bench._common import bench_quiz, median, target

RATIO_GOAL = 1.10


def team_of(i: int) -> str:
    return f"T{i:07d}"


def channel_of(i: int) -> str:
    return f"C{i:07d}"


def token_of(i: int) -> str:
    return f"xoxb-{team_of(i)}-bench"


# -- the fake Slack process ------------------------------------------------------------


def run_fake(workspaces: int, conn: Connection) -> None:
    asyncio.run(_fake_main(workspaces, conn))


async def _fake_main(workspaces: int, conn: Connection) -> None:
    from tests.adapters.slack.fake_slack import FakeSlack

    loop = asyncio.get_running_loop()
    async with FakeSlack() as fake:
        for i in range(workspaces):
            fake.add_workspace(team_of(i), token_of(i), (channel_of(i),))
        conn.send(fake.port)
        while (await loop.run_in_executor(None, conn.recv)) == "count":
            conn.send(
                {
                    "private_replies": len(fake.calls_to("response_url")),
                    "posts": len(fake.calls_to("chat.postMessage")),
                    "updates": len(fake.calls_to("chat.update")),
                    "refused": len([c for c in fake.calls if not c.ok]),
                    "violations": len(fake.violations),
                    "tokens": len({c.token for c in fake.calls if c.token}),
                }
            )


# -- the bot process -------------------------------------------------------------------


def run_bot(
    db_url: str, api_url: str, workspaces: int, count_interval: float, conn: Connection
) -> None:
    asyncio.run(_bot_main(db_url, api_url, workspaces, count_interval, conn))


async def _bot_main(
    db_url: str, api_url: str, workspaces: int, count_interval: float, conn: Connection
) -> None:
    from slack_sdk.oauth.installation_store import Installation

    from adapters.slack.app import SlackAdapter
    from adapters.slack.chat import SlackChat
    from adapters.slack.config import SlackConfig
    from adapters.slack.tokens import WorkspaceTokens
    from bot.app import settled_heap
    from bot.clock import SystemClock
    from bot.domain import ChannelRef, Platform
    from storage.store import SqlStore
    from tests.adapters.served import endpoint_served
    from tests.adapters.slack.slack_requests import SIGNING_SECRET

    loop = asyncio.get_running_loop()
    config = SlackConfig(
        None,
        signing_secret=SIGNING_SECRET,
        api_url=api_url,
        client_id="1111.2222",
        client_secret="bench-secret",
    )
    clock = SystemClock()
    async with SqlStore(db_url) as store:
        for i in range(workspaces):
            await store.slack_installs.async_save(
                Installation(
                    team_id=team_of(i),
                    bot_token=token_of(i),
                    bot_user_id="UQUIZBOT",
                    user_id="UINSTALLER",
                )
            )
        tokens = WorkspaceTokens(store.slack_installs, clock)
        async with (
            SlackChat(None, tokens=tokens, base_url=api_url) as chat,
            bench_quiz(
                store, {Platform.SLACK: chat}, clock, count_update_interval=count_interval
            ) as quiz,
            SlackAdapter(
                quiz, chat, config, installs=store.slack_installs, states=store.slack_states
            ) as adapter,
            endpoint_served(adapter, backlog=4096) as port,
        ):
            service = quiz.service
            posts: dict[int, dict[int, int]] = {}
            with settled_heap():
                conn.send(port)
                while (msg := await loop.run_in_executor(None, conn.recv)) != "stop":
                    if msg == "ask":  # a new question in every workspace
                        # The posts read each workspace's token (kept 30 s), as a running
                        # bot's traffic keeps them: the burst measures the warm path.
                        rep = len(posts)
                        posts[rep] = {}
                        for i in range(workspaces):
                            ref = ChannelRef(Platform.SLACK, team_of(i), channel_of(i))
                            await service.close_channel(ref)  # the last burst's question
                            post = await service.ask(ref)
                            assert post is not None
                            posts[rep][i] = post.id
                        conn.send(posts[rep])
                    elif msg == "count":
                        await adapter.idle()
                        await service.drain_updates()
                        rep = max(posts)
                        stored = distinct = 0
                        for post_id in posts[rep].values():
                            answers = await store.answers.for_post(post_id)
                            stored += len(answers)
                            distinct += len({(a.user.workspace, a.user.user) for a in answers})
                        conn.send((stored, distinct))


# -- the client (this process) ---------------------------------------------------------


def prepare(
    port: int, fake_port: int, posts: dict[int, int], users: int, workspaces: int
) -> list[bytes]:
    """`users` signed clicks, user n in workspace n % workspaces, on its question."""
    from tests.adapters.slack import slack_requests as rq

    out = []
    for n in range(users):
        i = n % workspaces
        user = f"U{n:07d}"
        payload = rq.block_actions(
            posts[i],
            n % 4,
            user=user,
            channel=channel_of(i),
            team=team_of(i),
            response_url=f"http://127.0.0.1:{fake_port}/response/click-{user}",
        )
        out.append(rq.raw_interaction("/slack/events", port, payload))
    return out


def run_multi(
    db_url: str, users: int, workspaces: int, repeats: int, count_interval: float = 1.0
) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    fake_end, fake_child = ctx.Pipe()
    bot_end, bot_child = ctx.Pipe()
    fake = ctx.Process(target=run_fake, args=(workspaces, fake_child), daemon=True)
    fake.start()
    fake_port = fake_end.recv()
    api = f"http://127.0.0.1:{fake_port}/api/"
    bot = ctx.Process(
        target=run_bot, args=(db_url, api, workspaces, count_interval, bot_child), daemon=True
    )
    bot.start()
    port = bot_end.recv()
    bursts: list[dict[str, Any]] = []
    try:
        # Warm-up (a click on no post), as slack_ack does: a bot that has been running.
        bot_end.send("ask")
        warm = prepare(port, fake_port, bot_end.recv(), 1, workspaces)
        assert asyncio.run(slack_ack.burst(port, warm, keepalive=False))["acked"] == 1
        bot_end.send("count")
        bot_end.recv()
        for _ in range(repeats):
            bot_end.send("ask")
            posts = bot_end.recv()
            clicks = prepare(port, fake_port, posts, users, workspaces)
            result = asyncio.run(slack_ack.burst(port, clicks, keepalive=True))
            bot_end.send("count")
            result["stored"], result["distinct"] = bot_end.recv()
            bursts.append(result)
        fake_end.send("count")
        seen = fake_end.recv()
    finally:
        bot_end.send("stop")
        fake_end.send("stop")
        bot.join(30)
        fake.join(30)
    return {"bursts": bursts, "fake": seen}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workspaces", type=int, default=100)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=slack_ack.REPEATS)
    parser.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument(
        "--pg", default=os.environ.get("QUIZBOT_TEST_POSTGRES_URL", slack_ack.PG_DEFAULT)
    )
    args = parser.parse_args()
    slack_ack.REPEATS = args.repeats  # the single-workspace bursts, as many

    results: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}

    def both(url: str) -> tuple[dict[str, Any], dict[str, Any]]:
        single = slack_ack.run_once(url, args.users)
        multi = run_multi(url, args.users, args.workspaces, args.repeats)
        return single, multi

    if args.db in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            results["sqlite"] = both(slack_ack.sqlite_url(tmp))
    if args.db in ("postgresql", "both"):
        from bench._common import drop_pg, pg_database

        pg = asyncio.run(pg_database(args.pg, "workspaces"))
        if pg is not None:
            try:
                results["postgresql"] = both(pg)
            finally:
                asyncio.run(drop_pg(args.pg, pg))

    for db, (single, multi) in results.items():
        one = median([single[f"keepalive-{i}"]["p99"] for i in range(args.repeats)])
        many = median([b["p99"] for b in multi["bursts"]])
        stored = min(b["stored"] for b in multi["bursts"])
        distinct = min(b["distinct"] for b in multi["bursts"])
        acked = min(b["acked"] for b in multi["bursts"])
        fake = multi["fake"]
        print(
            f"{db}: {args.repeats} bursts of {args.users} clicks over {args.workspaces} "
            f"workspaces; p99 per burst "
            + ", ".join(f"{b['p99']:.0f}" for b in multi["bursts"])
            + f" ms (median {many:.0f}); one workspace (slack_ack, same run) p99 "
            + ", ".join(f"{single[f'keepalive-{i}']['p99']:.0f}" for i in range(args.repeats))
            + f" ms (median {one:.0f}); {fake['tokens']} distinct tokens used, "
            f"{fake['private_replies']} private outcomes, {fake['updates']} count edits "
            f"(chat.update), {fake['refused']} calls refused"
        )
        target(
            f"slack_workspaces_{db}_ack_p99",
            f"{many:.0f} ms vs {one:.0f} ms for one workspace ({many / one:.2f}x)",
            f"<= {RATIO_GOAL:.2f}x",
            many <= one * RATIO_GOAL,
        )
        target(
            f"slack_workspaces_{db}_all_acknowledged",
            f"{acked}/{args.users}",
            "all",
            acked == args.users,
        )
        target(
            f"slack_workspaces_{db}_all_stored",
            f"{stored}/{args.users} (fewest of {args.repeats} bursts)",
            "all",
            stored == distinct == args.users,
        )
        target(
            f"slack_workspaces_{db}_foreign_token_calls",
            str(fake["violations"]),
            "0",
            fake["violations"] == 0,
        )


if __name__ == "__main__":
    main()
