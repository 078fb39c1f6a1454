"""Family `expandable-segments`: the same workload, native or with expandable segments.

`n` tensors of `a` are allocated and all freed, then `m` larger tensors of `c`. Native
segments never grow or merge, so the larger tensors need new segments beside the cached
ones; with ``expandable_segments:True`` one range per pool grows in 20 MiB pages and the
freed pages are reused; such ranges are not counted in ``segment.*`` (spec 1.12, S11), so
the segment count is asked of native segments only.
"""

from __future__ import annotations

from typing import Any

from bot.i18n import Localized, Text
from questions.families.misconceptions import (
    allocated_not_reserved,
    freed_memory_returns,
    live_segments_only,
    no_reuse,
)
from questions.families.model import Candidate, Draft, Style, trace_family
from questions.families.narrate import (
    ALLOCATOR_SOURCE,
    CONF_DOCS,
    RESERVED,
    SEGMENTS,
    api,
    conclusion,
    setup,
    size,
)
from questions.families.sizes import MIB
from questions.families.space import Space, grid
from questions.families.trace import (
    free,
    malloc,
    replay_ops,
    replay_value,
    snapshot_after,
    trace_draft,
)

EXPANDABLE = "expandable_segments:True"
SIZES = dict(
    a=(4, 6, 8, 12, 16, 24),
    n=(2, 3, 4, 6, 8),
    mult=(1.5, 2, 2.5, 3, 4),
    m=(2, 3, 4, 5),
)
# With expandable segments segment.* counts nothing (always 0): only reserved bytes are
# asked there.
SPACE = Space(
    (
        grid("native", conf=("",), **SIZES, ask=(RESERVED, SEGMENTS)),
        grid("expandable", conf=(EXPANDABLE,), **SIZES, ask=(RESERVED,)),
    )
)
JITTER = 1000  # bytes added to every size, so that requested and rounded bytes differ
PROMPT = Text(
    "{settings}; uint8 tensors on an empty GPU: {n} tensors of {a}, all deleted, then {m} "
    "tensors of {c} (kept). What does {api} report then?"
)


def _steps(
    conf: str, n: int, a: int, m: int, c: int, first: int, final: int, ask: str, answer: int
) -> list[Localized]:
    more = final - first
    if conf:
        steps: list[Localized] = [
            Text(
                "Expandable segments grow one range per pool in 20 MiB pages: the {n} "
                "tensors of {a} map {R}.",
                n=n,
                a=size(a),
                R=size(first),
            )
        ]
    else:
        steps = [
            Text(
                "Native segments: the {n} tensors of {a} reserve {R}.",
                n=n,
                a=size(a),
                R=size(first),
            )
        ]
    grow = Text("add {x}", x=size(more)) if more else Text("fit in the cached memory")
    steps.append(
        Text(
            "del keeps it all cached; the {m} tensors of {c} then {grow}: {F} in all.",
            m=m,
            c=size(c),
            grow=grow,
            F=size(final),
        )
    )
    if ask == SEGMENTS:
        steps.append(
            Text("Segments never grow or merge, so the cached ones stay beside the new ones.")
        )
    steps.append(conclusion(ask))
    return steps


def _pages(sizes: list[int]) -> int:
    return -(-sum(-(-n // 512) * 512 for n in sizes) // (20 * MIB)) * 20 * MIB


def _live(inputs: dict[str, Any]) -> int:
    ops = inputs["ops"]
    return int(sum(op[0] == "malloc" for op in ops) - sum(op[0] == "free" for op in ops))


def _reserved_candidates(
    inputs: dict[str, Any], stats: dict[str, int], other: Candidate
) -> list[Candidate]:
    """Misconceptions about reserved bytes; those about segments where the trace runs
    native, those about pages where it runs with expandable segments (a note about pages
    would give a false reason for a native run, and the other way round)."""
    mallocs = [int(op[2]) for op in inputs["ops"] if op[0] == "malloc"]
    first, live = mallocs[: len(mallocs) - _live(inputs)], mallocs[-_live(inputs) :]
    shared = [
        other,
        freed_memory_returns(inputs),
        allocated_not_reserved(stats["allocated_bytes.all.current"]),
        no_reuse(inputs),
        live_segments_only(inputs),
        Candidate(
            "cached-bytes-added-twice",
            2 * stats[RESERVED] - stats["allocated_bytes.all.current"],
            Text("adds the cached free bytes again; reserved already holds them."),
        ),
    ]
    if not inputs["conf"]:
        return [
            *shared,
            Candidate(
                "fixed-segment-per-tensor",
                sum(20 * MIB for _ in mallocs),
                Text("a 20 MiB segment per tensor; 10 MiB and up get their own size."),
            ),
            Candidate(
                "segments-rounded-to-20mib",
                sum(
                    -(-seg["total_size"] // (20 * MIB)) * 20 * MIB for seg in snapshot_after(inputs)
                ),
                Text("segments rounded to 20 MiB; from 10 MiB on they round to 2 MiB."),
            ),
            Candidate(
                "first-tensors-segments-only",
                replay_value(inputs, ops=inputs["ops"][: 2 * len(first)]),
                Text("the first tensors' segments only; the larger ones get new ones."),
            ),
        ]
    return [
        *shared,
        Candidate(
            "page-run-per-tensor",
            sum(-(-n // (20 * MIB)) * 20 * MIB for n in live),
            Text("20 MiB pages per tensor; tensors share the pages of one range."),
        ),
        Candidate(
            "live-bytes-in-pages",
            -(-stats["allocated_bytes.all.current"] // (20 * MIB)) * 20 * MIB,
            Text("pages for live blocks alone; freed pages stay mapped."),
        ),
        Candidate(
            "freed-pages-not-reused",
            _pages(first) + _pages(live),
            Text("maps new pages for the larger tensors; the freed pages are reused."),
        ),
        Candidate(
            "first-tensors-only",
            _pages(first),
            Text("the pages of the first tensors only; the larger ones map more."),
        ),
        Candidate(
            "pages-for-every-request",
            -(-sum(mallocs) // (20 * MIB)) * 20 * MIB,
            Text("pages for every tensor ever allocated; freed pages are reused."),
        ),
        Candidate(
            "pages-of-2mib",
            -(-stats["allocated_bytes.all.peak"] // (2 * MIB)) * 2 * MIB,
            Text("the peak in 2 MiB pages; large-pool pages are 20 MiB."),
        ),
    ]


def _segment_candidates(
    inputs: dict[str, Any], n: int, m: int, stats: dict[str, int], other: Candidate
) -> list[Candidate]:
    total = sum(int(op[2]) for op in inputs["ops"][-m:])
    return [
        other,
        Candidate(
            "one-segment-per-tensor",
            n + m,
            Text("a segment per tensor ever allocated; cached ones are reused."),
        ),
        Candidate(
            "one-segment-per-live-tensor",
            m,
            Text("counts only segments with live tensors; cached ones count too."),
        ),
        freed_memory_returns(inputs),
        Candidate(
            "reserved-in-2mib-units",
            stats["reserved_bytes.all.current"] // (2 * MIB),
            Text("reserved bytes in 2 MiB units; a segment is one cudaMalloc."),
        ),
        Candidate(
            "segments-of-20mib",
            -(-stats["reserved_bytes.all.current"] // (20 * MIB)),
            Text("reserved bytes in 20 MiB units; big segments fit their tensor."),
        ),
        Candidate(
            "live-bytes-in-20mib-segments",
            -(-total // (20 * MIB)),
            Text("live bytes in 20 MiB segments; each cudaMalloc is one segment."),
        ),
        Candidate(
            "blocks-not-segments",
            sum(len(seg["blocks"]) for seg in snapshot_after(inputs)),
            Text("counts blocks, free ones too; one segment holds several blocks."),
        ),
        Candidate(
            "cached-segments-released",
            replay_value(inputs, ops=[*inputs["ops"], ["empty_cache"]]),
            Text("only segments with live blocks; free cached ones count too."),
        ),
    ]


def build(variant: str, params: dict[str, Any]) -> Draft:
    conf, ask = str(params["conf"]), str(params["ask"])
    a, n, m = int(params["a"]) * MIB + JITTER, int(params["n"]), int(params["m"])
    c = int(int(params["a"]) * MIB * float(params["mult"])) + JITTER
    ops = [malloc(f"t{i}", a) for i in range(n)]
    ops += [free(f"t{i}") for i in range(n)]
    ops += [malloc(f"u{i}", c) for i in range(m)]
    inputs, run = replay_ops(ops, ask, conf=conf)
    answer = run.value(ask)
    first = run.results[n - 1].reserved
    other_conf = "" if conf else EXPANDABLE
    other = Candidate(
        "native-and-expandable-confused",
        replay_value(inputs, conf=other_conf),
        Text("the figure with expandable segments off.")
        if conf
        else Text("the figure with expandable_segments:True."),
    )
    candidates = (
        _reserved_candidates(inputs, run.stats, other)
        if ask == RESERVED
        else _segment_candidates(inputs, n, m, run.stats, other)
    )
    prompt = PROMPT.fill(settings=setup(conf), n=n, a=size(a), m=m, c=size(c), api=api(ask))
    return trace_draft(
        "allocator-config",
        3,
        inputs,
        prompt,
        _steps(conf, n, a, m, c, first, run.stats[RESERVED], ask, answer),
        answer,
        candidates,
        (CONF_DOCS, ALLOCATOR_SOURCE),
        style=Style.COUNT if ask == SEGMENTS else Style.EXACT_SIZE,
    )


FAMILY = trace_family(
    id="expandable-segments",
    topic="allocator-config",
    difficulty=(3, 3),
    description=(
        "Native vs expandable_segments:True: tensors freed, then larger ones; reserved "
        "memory, or the native segment count"
    ),
    space=SPACE,
    build=build,
    rank_weights=(1.45, 0.6, 0.85, 1.6),  # few misconceptions reserve less
)
