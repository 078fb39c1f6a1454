"""``quizbot sim ...``: the simulator's command group (``replay``).

The lead's ``bot/cli.py`` calls `add_sim_commands` on its subparsers; every subcommand
sets ``func(args) -> int`` (the exit code). What it prints and plots goes through the
catalogs (``--locale el``; ``bot/locale/el/LC_MESSAGES/simulator.po``); the argparse help
and the snapshot's own error messages stay in English.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from bot import formats
from bot.domain import Locale
from bot.i18n import translator
from gpu_runner.sim._errors import AllocatorConfigError, SnapshotError
from gpu_runner.sim._sizes import MiB, parse_size
from gpu_runner.sim._unpickle import MAX_SNAPSHOT_BYTES
from gpu_runner.sim.replay import RecordedFigures, ReplayResult, recorded_figures, replay_file

EXIT_OK = 0
EXIT_USAGE = 2


def add_sim_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``sim`` (with ``sim replay``) to an argparse subparsers object."""
    sim = subparsers.add_parser(
        "sim",
        help="CUDA caching-allocator simulator",
        description="Simulate PyTorch's CUDA caching allocator on the CPU.",
    )
    sim_sub = sim.add_subparsers(dest="sim_command", metavar="COMMAND")
    sim_sub.required = True
    replay = sim_sub.add_parser(
        "replay",
        help="replay a torch.cuda.memory._dump_snapshot() pickle",
        description=(
            "Replay the alloc/free events of a memory snapshot with the recorded allocator "
            "settings and with --conf, and compare peak memory, fragmentation and OOMs."
        ),
    )
    replay.add_argument("snapshot", type=Path, help="pickle written by _dump_snapshot()")
    replay.add_argument(
        "--conf",
        default="",
        help="PYTORCH_CUDA_ALLOC_CONF to compare with, e.g. 'expandable_segments:True'",
    )
    replay.add_argument(
        "--total-memory",
        default="80GiB",
        help="device memory of the simulated GPU (default 80GiB), e.g. 141GB",
    )
    replay.add_argument("--device", type=int, default=None, help="device trace to replay")
    replay.add_argument(
        "--max-size",
        default=f"{MAX_SNAPSHOT_BYTES // MiB}MiB",
        help=f"refuse larger snapshot files (default {MAX_SNAPSHOT_BYTES // MiB}MiB)",
    )
    replay.add_argument(
        "--locale",
        type=_locale,
        default=Locale.EN,
        help="language of the report and the plot: en (default) or el",
    )
    where = replay.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, help="directory for the PNG (default: .)")
    where.add_argument("--plot", type=Path, help="path of the PNG")
    replay.set_defaults(func=run_replay)


def _locale(text: str) -> Locale:
    locale = Locale.parse(text)
    if locale is None:
        raise argparse.ArgumentTypeError(
            f"unknown locale {text!r}: use one of {', '.join(loc.value for loc in Locale)}"
        )
    return locale


def _row(name: str, cells: list[str]) -> str:
    return f"{name:<24}" + "".join(f" {c:>25}" for c in cells)


def _mib(nbytes: int, locale: Locale) -> str:
    """Two decimals in MiB, digits grouped from 10,000: ``608.07 MiB``, ``12,288.00 MiB``."""
    return formats.size(nbytes, locale, unit=formats.MIB, digits=2, group_from=10_000)


def format_report(
    recorded: ReplayResult,
    asked: ReplayResult,
    figures: RecordedFigures,
    locale: Locale = Locale.EN,
) -> list[str]:
    """The comparison table printed by ``sim replay``."""
    t = translator(locale)

    def mib(nbytes: int) -> str:
        return _mib(nbytes, locale)

    defaults = t("(defaults)")
    rec_peak = "-" if figures.peak_reserved is None else mib(figures.peak_reserved)
    frag = [formats.number(r.fragmentation_at_peak, locale, 3) for r in (recorded, asked)]
    return [
        _row("", [t("recorded run"), t("sim: recorded conf"), t("sim: asked conf")]),
        _row(
            t("settings"),
            [t("(as traced)"), recorded.conf or defaults, asked.conf or defaults],
        ),
        _row(
            t("peak allocated"),
            ["-", mib(recorded.peak_allocated), mib(asked.peak_allocated)],
        ),
        _row(
            t("peak reserved"),
            [rec_peak, mib(recorded.peak_reserved), mib(asked.peak_reserved)],
        ),
        _row(
            t("unallocated at peak"),
            ["-", mib(recorded.unallocated_at_peak), mib(asked.unallocated_at_peak)],
        ),
        _row(t("fragmentation at peak"), ["-", *frag]),
        _row("OOMs", [str(figures.num_ooms), str(recorded.num_ooms), str(asked.num_ooms)]),
        _row(
            t("alloc retries"),
            ["-", str(recorded.num_alloc_retries), str(asked.num_alloc_retries)],
        ),
    ]


def run_replay(args: argparse.Namespace) -> int:
    """``quizbot sim replay``: print the comparison and write the PNG."""
    locale: Locale = getattr(args, "locale", Locale.EN)
    t = translator(locale)
    try:
        total = parse_size(args.total_memory)
        snapshot, device, recorded, asked = replay_file(
            args.snapshot,
            total_memory=total,
            conf=args.conf,
            device=args.device,
            max_bytes=parse_size(args.max_size),
        )
    except (SnapshotError, AllocatorConfigError, ValueError) as exc:
        print(t("error: {error}", error=exc), file=sys.stderr)
        return EXIT_USAGE
    figures = recorded_figures(snapshot, device)
    events = snapshot.traces[device]
    print(
        t(
            "Replay of {path}: device {device}, {allocs} allocs, {frees} frees of {events} "
            "events; simulated GPU {total}",
            path=snapshot.path,
            device=device,
            allocs=recorded.allocs,
            frees=recorded.frees,
            events=len(events),
            total=formats.size(total, locale, unit=formats.GIB, digits=2),
        )
    )
    print(
        t(
            "recorded settings: {conf} ({note})",
            conf=recorded.conf or t("(defaults)"),
            note=t(snapshot.settings_note),
        )
    )
    for line in format_report(recorded, asked, figures, locale):
        print(line)
    if recorded.unknown_frees:
        print(
            t(
                "note: {count} frees of blocks allocated before the recording started were "
                "skipped; peaks count only memory allocated while recording",
                count=recorded.unknown_frees,
            )
        )
    from gpu_runner.sim.plot import plot_replays

    path = args.plot or (args.out or Path(".")) / f"{args.snapshot.stem}-replay.png"
    names = [
        t("recorded ({conf})", conf=recorded.conf or t("defaults")),
        t("asked ({conf})", conf=asked.conf or t("defaults")),
    ]
    written = plot_replays(
        [replace(r, label=name) for r, name in zip((recorded, asked), names, strict=True)],
        path,
        title=t("Replay of {name}", name=args.snapshot.name),
        locale=locale,
    )
    print(t("plot: {path}", path=written))
    return EXIT_OK
