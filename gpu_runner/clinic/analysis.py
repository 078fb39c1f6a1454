"""The clinic itself: replay a snapshot's busiest trace under the recorded settings and
the candidates, decide, and write the table, the recommendation and the PNG."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.clinic import ClinicStage, Rejection
from bot.domain import Locale
from gpu_runner.clinic import _text as text
from gpu_runner.clinic._candidates import (
    GC_FAMILY,
    RECORDED,
    Candidate,
    combination,
    same_as_without_gc,
    single_candidates,
)
from gpu_runner.clinic._chart import render_png
from gpu_runner.clinic._input import GpuSource, Loaded, Rejected
from gpu_runner.clinic._pool import replay_all
from gpu_runner.clinic._program import TraceProgram, compile_trace
from gpu_runner.clinic._replay import ConfigRun
from gpu_runner.clinic._verdict import Finding, Tried, Verdict, decide, improves, ranked
from gpu_runner.sim.replay import recorded_figures

ProgressFn = Callable[[ClinicStage, int, int], None]


@dataclass(frozen=True, slots=True)
class ClinicOutput:
    title: str
    text: str
    table: str
    recommendation: str | None
    png: bytes
    summary: dict[str, Any]


def analyse(
    loaded: Loaded,
    name: str,
    locale: Locale,
    *,
    workers: int = 1,
    progress: ProgressFn = lambda stage, done, total: None,
) -> ClinicOutput:
    """Everything the member gets, from a checked snapshot."""
    clock = [time.perf_counter()]

    def lap() -> float:
        clock.append(time.perf_counter())
        return round(clock[-1] - clock[-2], 2)

    snapshot = loaded.snapshot
    program = compile_trace(snapshot.traces[loaded.device])
    if program.allocs == 0:
        raise Rejected(Rejection.NO_HISTORY, name=name)
    gpu = loaded.gpu_memory
    timings = {"compile_s": lap()}
    tried = _replay_candidates(program, snapshot.settings.text, gpu, workers, progress)
    timings["replay_s"] = lap()
    verdict = decide(tried, program, gpu)
    shown = [tried[0], *ranked(tried[1:])]
    w = text.Words(locale)
    headline = text.title(verdict, w)
    table = text.table(shown, verdict.chosen, w)
    recommendation = f"PYTORCH_CUDA_ALLOC_CONF={verdict.chosen[0].conf}" if verdict.chosen else None
    body = _body(loaded, name, program, verdict, table, recommendation, shown, w)
    other = verdict.chosen or verdict.best
    series = [
        (
            w.t("recorded"),
            tried[0],
        )
    ]
    if other is not tried[0]:
        series.append((other[0].label, other))
    png = render_png(program, series, title=headline, gpu_memory=gpu, w=w)
    summary = _summary(loaded, program, verdict, shown, recommendation)
    timings["render_s"] = lap()
    summary["timings"] = timings
    return ClinicOutput(headline, body, table, recommendation, png, summary)


def _replay_candidates(
    program: TraceProgram, recorded: str, gpu: int, workers: int, progress: ProgressFn
) -> list[Tried]:
    """The recorded settings and every candidate, replayed (or derived) in three rounds:
    the single options on all workers; garbage collection, unless the recorded run stays
    so far below the cap that it cannot act; the combination of what helped."""
    singles = single_candidates(recorded, program)
    gc = singles.pop() if singles[-1].family == GC_FAMILY else None
    total = len(singles) + (gc is not None) + 1
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        progress(ClinicStage.REPLAYING, done, total)

    def replay(candidates: list[Candidate], n: int) -> list[Tried]:
        runs = replay_all(program, [c.config for c in candidates], gpu, workers=n, on_done=tick)
        return list(zip(candidates, runs, strict=True))

    progress(ClinicStage.REPLAYING, 0, total)
    tried = replay(singles, workers)
    if gc is not None:
        if same_as_without_gc(gc, tried[0][1], program, gpu):
            tried.append((gc, tried[0][1]))
            tick()
        else:
            tried += replay([gc], 1)
    base = tried[0][1]
    helped: dict[str, bool] = {}
    for candidate, run in tried[1:]:
        helped[candidate.family] = helped.get(candidate.family, False) or improves(run, base)
    combined = combination(ranked(tried), helped)
    if combined is not None:
        tried += replay([combined], 1)
    progress(ClinicStage.REPLAYING, total, total)
    return tried


def _body(
    loaded: Loaded,
    name: str,
    program: TraceProgram,
    verdict: Verdict,
    table: str,
    recommendation: str | None,
    shown: list[Tried],
    w: text.Words,
) -> str:
    """The message body, trimmed to fit one chat message (notes go first)."""
    gpu = w.gib(loaded.gpu_memory)
    source = {
        GpuSource.GIVEN: w.t("as given"),
        GpuSource.ESTIMATED: w.t("estimated from the recorded OOM: reserved + free at that moment"),
    }.get(
        loaded.gpu_source,
        w.t("the snapshot does not record the GPU's size: give gpu_memory to change it"),
    )
    failed = program.failed_requests
    allocs, frees = w.num(program.allocs - failed), w.num(program.frees - failed)
    retried = ""
    if failed:
        retried = w.t.n(
            ", and retried the request that ran out of memory,",
            ", and retried the {count} requests that ran out of memory,",
            failed,
        )
    intro = w.t(
        "Replayed {allocs} allocations and {frees} frees of {name}{retried} on a "
        "simulated {gpu} GPU ({source}) under {shown} settings.",
        allocs=allocs,
        frees=frees,
        name=name,
        retried=retried,
        gpu=gpu,
        source=source,
        shown=len(shown),
    )
    recorded = loaded.snapshot.settings.text
    # The headline is the message's title (and the PNG's): not repeated in the body.
    must = [intro, f"```\n{table}\n```"]
    if recommendation is not None:
        must += [
            w.t("Set, before CUDA starts:"),
            f"```\n{recommendation}\n```",
            text.saving_line(verdict, w),
        ]
    else:
        must.append(text.why_nothing(verdict, w))
    optional = []
    if verdict.chosen is not None:
        optional += [f"- {line}" for line in text.caveats(verdict.chosen, w)]
    optional.append(f"- {text.replay_limits(w)}")
    optional.append(
        w.t("Recorded settings: ") + (f"`{recorded}`" if recorded else w.t("torch defaults")) + "."
    )
    combined = next((c for c, _ in shown if c.family == "combined"), None)
    if combined is not None and len(combined.label) > text.LABEL_WIDTH - 2:
        optional.append(w.t("combined: ") + f"`{combined.conf}`.")
    if loaded.devices > 1:
        events = w.num(len(loaded.snapshot.traces[loaded.device]))
        optional.append(
            w.t(
                "The snapshot has traces for {devices} devices: this is device {device}, "
                "the busiest ({events} events).",
                devices=loaded.devices,
                device=loaded.device,
                events=events,
            )
        )
    figures = recorded_figures(loaded.snapshot, loaded.device)
    if figures.peak_reserved:
        optional.append(
            w.t(
                "The recorded run itself reserved at most {peak_reserved} and hit {num_ooms}.",
                peak_reserved=w.mib(figures.peak_reserved),
                num_ooms=w.ooms(figures.num_ooms),
            )
        )
    if program.unknown_frees:
        optional.append(
            w.t(
                "{unknown_frees} frees of blocks allocated before recording started were "
                "skipped: peaks count only memory allocated while recording.",
                unknown_frees=w.num(program.unknown_frees),
            )
        )
    optional.append(text.legend(w))
    parts = must + optional
    while len("\n".join(parts)) > text.MAX_TEXT and len(parts) > len(must):
        parts.pop()  # the least needed note is last
    return "\n".join(parts)


def _summary(
    loaded: Loaded,
    program: TraceProgram,
    verdict: Verdict,
    shown: list[Tried],
    recommendation: str | None,
) -> dict[str, Any]:
    """The figures as plain JSON: what the bot may store once the file is gone."""
    return {
        "finding": verdict.finding.value,
        "recommendation": recommendation,
        "saving_bytes": verdict.saving if verdict.finding is Finding.RECOMMEND else 0,
        "saving_pct": round(verdict.saving_pct, 2) if verdict.finding is Finding.RECOMMEND else 0,
        "recorded_conf": loaded.snapshot.settings.text,
        "device": loaded.device,
        "devices": loaded.devices,
        "events": len(loaded.snapshot.traces[loaded.device]),
        "allocs": program.allocs,
        "frees": program.frees,
        "unknown_frees": program.unknown_frees,
        "gpu_memory": loaded.gpu_memory,
        "gpu_memory_source": loaded.gpu_source,
        "demand_peak": program.demand_peak,
        "configs": [_config_summary(c, r) for c, r in shown],
    }


def _config_summary(candidate: Candidate, run: ConfigRun) -> dict[str, Any]:
    return {
        "label": candidate.label,
        "family": candidate.family,
        "conf": candidate.conf,
        "recorded": candidate.family == RECORDED,
        "peak_reserved": run.peak_reserved,
        "peak_allocated": run.peak_allocated,
        "unallocated_at_peak": run.unallocated_at_peak,
        "fragmentation_at_peak": round(run.fragmentation_at_peak, 4),
        "ooms": run.ooms,
        "alloc_retries": run.alloc_retries,
    }
