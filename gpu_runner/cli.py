"""`quizbot demo list|run` and `quizbot runner worker` (wired into bot/cli.py)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.domain import DemoJob, DemoState, Locale


def add_demo_commands(subparsers: Any, settings: Callable[[], WorkerSettings]) -> None:
    demo = subparsers.add_parser("demo", help="list or run the GPU memory demonstrations")
    sub = demo.add_subparsers(dest="demo_command", metavar="ACTION", required=True)
    lst = sub.add_parser("list", help="the registered demos and their parameters")
    lst.set_defaults(func=_list)
    run = sub.add_parser("run", help="run one demo in a fresh process and print its report")
    run.add_argument("id", help="demo id (see `quizbot demo list`)")
    run.add_argument(
        "--simulate",
        action="store_true",
        help="use the allocator simulator / CPU even where CUDA is present",
    )
    run.add_argument("--locale", default="en", choices=[loc.value for loc in Locale])
    run.add_argument("--out", type=Path, help="write report.md, metrics.json and plot.png here")
    run.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a demo parameter (repeatable)",
    )
    run.add_argument("--timeout", type=float, default=None, help="seconds (default: the demo's)")
    run.set_defaults(func=_with(settings, _run))


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """What `runner worker` and `runner ping` need of the bot's settings (the composition
    root reads them: the runner does not import the bot's configuration)."""

    broker_url: str
    broker_shown: str  # the broker's URL without its password, for messages
    clinic_max_bytes: int
    demo_user: str = "nobody"  # a runner started as root runs demos as this user


def add_runner_commands(subparsers: Any, settings: Callable[[], WorkerSettings]) -> None:
    runner = subparsers.add_parser("runner", help="run demos for other bot hosts")
    sub = runner.add_subparsers(dest="runner_command", metavar="ACTION", required=True)
    worker = sub.add_parser(
        "worker", help="Celery worker for a GPU host (broker: QUIZBOT_CELERY_BROKER_URL)"
    )
    worker.add_argument(
        "--concurrency", type=int, default=None, help="demos at a time (default: one per GPU, or 1)"
    )
    worker.add_argument("--queue", default=None, help="queue name (default: quizbot-demos)")
    worker.add_argument("--loglevel", default="INFO")
    worker.set_defaults(func=_with(settings, _worker))
    ping = sub.add_parser(
        "ping", help="exit 0 when this host's runner worker answers (a health check)"
    )
    ping.add_argument("--all", action="store_true", help="any worker, not only this host's")
    ping.add_argument("--timeout", type=float, default=5.0, help="seconds to wait (default 5)")
    ping.set_defaults(func=_with(settings, _ping))


def _list(args: argparse.Namespace) -> int:
    from gpu_runner.demos import default_registry

    for demo in default_registry().values():
        params = ", ".join(p.describe() for p in demo.params) or "-"
        print(f"{demo.id:<26} {demo.kind.value:<9} {demo.title}")
        print(f"{'':<26} params: {params}")
    return 0


def _run(args: argparse.Namespace, settings: WorkerSettings) -> int:
    from gpu_runner.demos import DemoKind, DemoRequestError, default_registry
    from gpu_runner.executor import Executor, ExecutorConfig

    registry = default_registry()
    params: dict[str, str] = {}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep:
            print(f"quizbot: error: --param {item!r}: write NAME=VALUE", file=sys.stderr)
            return 2
        params[name] = value
    job = DemoJob(0, args.id, Locale(args.locale), params, simulate=args.simulate)
    try:
        registry.check(job.demo, job.params)  # refuse before starting anything
    except DemoRequestError as exc:
        print(f"quizbot: error: {exc}", file=sys.stderr)
        return 2
    demo = registry[job.demo]
    # A simulated allocator demo needs no torch: skip the slow import in the fork server.
    lean = args.simulate and demo.kind is DemoKind.ALLOCATOR
    config = ExecutorConfig(preload_torch=not lean, demo_user=settings.demo_user)
    with Executor(config, registry=registry) as executor:
        result = executor.run(job, timeout=args.timeout)
    print(result.report or f"{result.state}: {result.error}")
    print(f"\n[{result.device or 'no device'}] {result.state}")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "report.md").write_text(
            (result.report or f"{result.state}: {result.error}") + f"\n\n{result.device}\n"
        )
        (args.out / "metrics.json").write_text(
            json.dumps(
                {
                    "demo": result.demo,
                    "state": str(result.state),
                    "device": result.device,
                    "error": result.error,
                    "metrics": dict(result.metrics),
                },
                indent=2,
                ensure_ascii=False,
            )
            + "\n"
        )
        if result.png:
            (args.out / "plot.png").write_bytes(result.png)
        print(f"wrote {args.out}/report.md, metrics.json" + (", plot.png" if result.png else ""))
    return 0 if result.state is DemoState.SUCCEEDED else 1


def _with(
    settings: Callable[[], WorkerSettings],
    run: Callable[[argparse.Namespace, WorkerSettings], int],
) -> Callable[[argparse.Namespace], int]:
    """`run` with the settings read when the command runs (named as `run`: logs, tests)."""

    def command(args: argparse.Namespace) -> int:
        return run(args, settings())

    command.__name__ = run.__name__
    return command


def _worker(args: argparse.Namespace, settings: WorkerSettings) -> int:
    from gpu_runner.celery_runner import DEFAULT_QUEUE, make_celery_app, run_worker
    from gpu_runner.executor import Executor, ExecutorConfig

    config = ExecutorConfig(demo_user=settings.demo_user)
    app = make_celery_app(
        settings.broker_url,
        queue=args.queue or DEFAULT_QUEUE,
        executor=lambda: Executor(config),
        clinic_max_bytes=settings.clinic_max_bytes,
    )
    return run_worker(app, args.concurrency, args.loglevel)


def _ping(args: argparse.Namespace, settings: WorkerSettings) -> int:
    import socket

    from gpu_runner.celery_runner import make_celery_app

    refused = _demos_refused(settings.demo_user)
    if refused:
        print(f"quizbot: error: demos are refused on this host: {refused}", file=sys.stderr)
        return 1
    app = make_celery_app(settings.broker_url).app
    # Workers are named celery@<hostname> (Celery's default node name).
    destination = None if args.all else [f"celery@{socket.gethostname()}"]
    try:
        # One connection attempt: a probe told to wait 0.5 s does not retry a refused broker
        # for seconds (kombu's default), and ping then uses the connection it made.
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=0, timeout=args.timeout)
            replies = app.control.ping(
                destination=destination, timeout=args.timeout, connection=conn
            )
    except Exception as exc:  # broker down: say which broker, never its password
        print(
            f"quizbot: error: broker {settings.broker_shown} unreachable: {type(exc).__name__}",
            file=sys.stderr,
        )
        return 1
    if not replies:
        who = "no runner worker" if args.all else f"no runner worker on {socket.gethostname()}"
        print(f"{who} answered within {args.timeout:g} s", file=sys.stderr)
        return 1
    for reply in replies:
        for node in reply:
            print(f"{node}: ok")
    return 0


def _demos_refused(demo_user: str) -> str:
    """Why this host's runner would refuse every demo ("" when it would run them): the
    fork server's own check, in this process (before any thread starts)."""
    from gpu_runner.isolation import demo_credentials, plan_isolation

    try:
        creds = demo_credentials(demo_user)
    except ValueError as exc:
        return str(exc)
    return plan_isolation(creds).refused or ""
