"""`quizbot` command line. Part of the composition root."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import textwrap
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from bot import __version__
from bot.config import Settings, env_name, load_settings
from bot.errors import QuizError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="quizbot", description="A quiz bot for team chat, with GPU memory demonstrations."
    )
    parser.add_argument("--version", action="version", version=f"quizbot {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    play = sub.add_parser("play", help="play in the terminal (console adapter)")
    play.add_argument("--channel", default="quiz", help="channel name (default: quiz)")
    play.add_argument("--user", default="you", help="who you are (default: you)")
    play.add_argument("--seed", type=int, default=None, help="seed question selection")
    play.set_defaults(func=_play)

    serve = sub.add_parser(
        "serve",
        help="run on Slack and/or Discord (whichever has credentials)",
        description=textwrap.fill(
            "Run the bot on every platform that has credentials: Slack with "
            "SLACK_BOT_TOKEN, Discord with DISCORD_TOKEN (both at once is fine).",
            88,
        ),
        epilog=settings_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.set_defaults(func=_serve)

    webp = sub.add_parser(
        "web", help="the dashboard for the console's workspace, on this machine (SQLite)"
    )
    webp.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    webp.add_argument("--port", type=int, default=None, help="port (QUIZBOT_HTTP_PORT)")
    webp.add_argument("--channel", default="quiz", help="the console channel (default: quiz)")
    webp.add_argument("--user", default="you", help="who you are (default: you)")
    webp.set_defaults(func=_web)

    db = sub.add_parser("db", help="database maintenance")
    dbsub = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    up = dbsub.add_parser("upgrade", help="apply migrations (QUIZBOT_DATABASE_URL)")
    up.set_defaults(func=_db_upgrade)
    bk = dbsub.add_parser("backup", help="online backup of the SQLite database to PATH")
    bk.add_argument("path", type=Path)
    bk.set_defaults(func=_db_backup)
    rs = dbsub.add_parser("restore", help="restore the SQLite database from PATH (bot stopped)")
    rs.add_argument("path", type=Path)
    rs.set_defaults(func=_db_restore)

    from gpu_runner.cli import add_demo_commands, add_runner_commands
    from gpu_runner.sim.cli import add_sim_commands
    from questions.cli import add_questions_commands
    from storage.member_cli import add_member_commands
    from storage.report import add_report_commands
    from storage.workspace_cli import add_workspace_commands

    add_questions_commands(sub, _open_store)
    add_demo_commands(sub, _worker_settings)
    add_runner_commands(sub, _worker_settings)
    add_sim_commands(sub)
    add_report_commands(sub, _open_store)
    add_member_commands(sub, _open_store)
    add_workspace_commands(sub, _open_store)

    return parser


def settings_help(width: int = 88) -> str:
    """Every variable `Settings` reads, with its meaning and default (the help of `serve`)."""
    lines = ["environment variables (or the same keys in the TOML file QUIZBOT_CONFIG names):"]
    for field, info in Settings.model_fields.items():
        default = info.default
        shown = getattr(default, "value", default)
        text = info.description or ""
        if shown not in (None, ""):
            text += f" (default: {shown})"
        lines.append(f"  {env_name(field)}")
        lines += textwrap.wrap(text, width, initial_indent="      ", subsequent_indent="      ")
    return "\n".join(lines)


def _open_store() -> AbstractAsyncContextManager[Any]:
    """The configured database, for the command-line tools of the other packages."""
    from bot.app import open_store

    return open_store(load_settings())


def _worker_settings() -> Any:
    from bot.config import redact_url
    from gpu_runner.cli import WorkerSettings

    settings = load_settings()
    url = settings.celery_broker_url
    return WorkerSettings(url, redact_url(url), settings.clinic_max_bytes, settings.demo_user)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        code = args.func(args)
        sys.stdout.flush()  # here, where a closed pipe can still be caught
    except BrokenPipeError:
        # The reader stopped early (`quizbot questions generate … | head`): no error
        # message, and no second one from the flush at exit — stdout goes to devnull, and
        # the exit status is Python's own on EPIPE
        # (https://docs.python.org/3/library/signal.html#note-on-sigpipe).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except QuizError as exc:
        print(f"quizbot: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # e.g. the HTTP port is taken
        print(f"quizbot: error: {exc}", file=sys.stderr)
        return 2
    return int(code or 0)


def _settings() -> Settings:
    settings = load_settings()
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # APScheduler logs a line per job added and per run: 10,000 schedules, 10,000 lines;
    # slack_sdk logs a line per retried HTTP call: an outage would flood the log. Our own
    # lines about those failures are throttled (bot.logs.ThrottledLog).
    if logging.getLogger().level > logging.DEBUG:
        for noisy in ("apscheduler", "slack_sdk", "slack_bolt"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    return settings


def _play(args: argparse.Namespace) -> int:
    import random

    from adapters.console.chat import ConsoleChat
    from adapters.console.clock import clock_command
    from adapters.console.play import ConsoleSession, stdin_lines
    from bot.app import build_core
    from bot.clock import OffsetClock
    from bot.demos import DemoDispatcher
    from bot.domain import Platform
    from bot.scheduling import Scheduler

    settings = load_settings()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    async def run() -> None:
        chat = ConsoleChat(sys.stdout, image_dir=Path("quizbot-plots"))
        rng = random.Random(args.seed) if args.seed is not None else None
        clock = OffsetClock()  # `/clock +1d` moves it, to try schedules locally
        async with build_core(
            settings, {Platform.CONSOLE: chat}, clock=clock, rng=rng, count_update_interval=0.0
        ) as core:
            session = ConsoleSession(
                core.quiz, chat, sys.stdout, channel=args.channel, user=args.user
            )
            scheduler = core.quiz.registry.service(Scheduler)
            if scheduler is not None:
                session.extra["clock"] = clock_command(clock, scheduler)
            interactive = sys.stdin.isatty()
            if interactive:
                session.say(
                    "quizbot console — /ask for a question, /help for commands, /quit to leave."
                )
            prompt = (lambda: f"{session.user.display}> ") if interactive else None
            await session.run(stdin_lines(sys.stdin, prompt), echo=not interactive)
            # A script ends at end of input: let demos started by its reveals post first.
            if (dispatcher := core.quiz.registry.service(DemoDispatcher)) is not None:
                await dispatcher.drain()

    asyncio.run(run())
    return 0


def _web(args: argparse.Namespace) -> int:
    """The dashboard on the embedded default: the console's workspace, everyone an admin,
    a one-time sign-in link printed; no platform credentials."""
    import secrets
    from dataclasses import replace

    from adapters.console.chat import ConsoleChat
    from adapters.web import WebServer
    from adapters.web.dashboard import build_dashboard
    from bot.app import build_core
    from bot.domain import ChannelRef, Platform

    settings = _settings()

    async def run() -> None:
        chat = ConsoleChat(sys.stdout, image_dir=Path("quizbot-plots"))
        async with build_core(settings, {Platform.CONSOLE: chat}) as core:
            channel = ChannelRef(Platform.CONSOLE, Platform.CONSOLE.value, args.channel)
            await core.store.settings.save(await core.store.settings.get(channel))
            port = settings.http_port if args.port is None else args.port
            host = "127.0.0.1" if args.host in ("localhost", "") else args.host
            dashboard = build_dashboard(
                core.quiz,
                core.store,
                core.store.web,
                secret=secrets.token_urlsafe(32),  # per run: a restart signs everyone out
                public_url=f"http://{host}:{port}",
                console_user=args.user,
            )
            server = WebServer(core.metrics.registry, port=port, host=host, checks=core.web.checks)
            dashboard.mount(server.app)
            async with server:
                url = f"http://{host}:{server.port}" if ":" not in host else server.url
                dashboard.config = replace(dashboard.config, public_url=url)
                print(f"quizbot dashboard on {url}/ — sign in once with:", flush=True)
                print(await dashboard.console_link(), flush=True)
                stop = asyncio.Event()
                loop = asyncio.get_running_loop()
                import signal

                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, stop.set)
                await stop.wait()

    asyncio.run(run())
    return 0


def _serve(args: argparse.Namespace) -> int:
    from bot.app import serve

    settings = _settings()
    asyncio.run(serve(settings))
    return 0


def _db_upgrade(args: argparse.Namespace) -> int:
    from bot.app import database_url
    from storage.engine import create_engine, current_revision, redact, upgrade

    settings = _settings()
    url = database_url(settings)

    async def run() -> str | None:
        engine = create_engine(url)
        try:
            await upgrade(engine)
            return await current_revision(engine)
        finally:
            await engine.dispose()

    rev = asyncio.run(run())
    print(f"database {redact(url)} is at revision {rev}")
    return 0


def _db_backup(args: argparse.Namespace) -> int:
    from bot.app import database_url
    from storage.backup import backup

    pages = backup(database_url(load_settings()), args.path)
    print(f"backed up {pages} pages to {args.path}")
    return 0


def _db_restore(args: argparse.Namespace) -> int:
    from bot.app import database_url
    from storage.backup import restore

    url = database_url(load_settings())
    done = restore(url, args.path)
    print(f"restored {args.path} (schema revision {done.revision})")
    if done.previous is not None:
        print(f"the database it replaced was saved to {done.previous}")
    if done.revision != done.head:
        print(f"it is upgraded to revision {done.head} at the next start (or: quizbot db upgrade)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
