"""Family `gc-threshold`: ``garbage_collection_threshold`` under a memory-fraction cap.

With a fraction set and ``garbage_collection_threshold:T``, a request that no cached block
fits first checks reserved memory against T × the cap; above it, the allocator frees
cached, unsplit large-pool segments that have sat idle at least the average age, then
again with the average of those left, until T × cap is reached (each pass frees every
block past the average, not just enough). Age counts large-pool allocation attempts since
the block was freed (``get_free_block`` calls). All of this happens before ``cudaMalloc``,
without the synchronisation of ``empty_cache()`` (spec 1.8; ``garbage_collect_cached_blocks``
in CUDACachingAllocator.cpp).

Each trace allocates x1..xn, each larger than the last (so nothing cached is reused), and
frees all but the last two in an order that sets their ages; only the last request finds
reserved memory over the threshold.
"""

from __future__ import annotations

from itertools import product
from typing import Any, Final, NamedTuple

from bot.formats import Number, Size
from bot.i18n import AND, Join, Localized, Text
from questions.families.model import Candidate, Draft, trace_family
from questions.families.narrate import (
    ALLOCATOR_SOURCE,
    CONF_DOCS,
    RESERVED,
    STATS_DOCS,
    api,
    conclusion,
    ops_text,
    size,
)
from questions.families.sizes import MIB
from questions.families.space import Space, grid
from questions.families.trace import (
    TOTAL_MEMORY,
    Op,
    free,
    malloc,
    replay_ops,
    replay_value,
    trace_draft,
)

FREED: Final = "reserved_bytes.all.freed"  # what reserved memory gave back: the collection
# op templates: m<i> allocates x<i>, f<i> frees it; every tensor but the last two is freed
# (cached), the one before last stays live, the last is the request that collects
TEMPLATES: Final = {
    "a": ("m1", "m2", "f1", "m3", "f2", "m4", "f3", "m5"),
    "b": ("m1", "f1", "m2", "m3", "f2", "m4", "f3", "m5"),
    "c": ("m1", "m2", "m3", "f2", "f1", "m4", "f3", "m5"),
    "d": ("m1", "m2", "m3", "f3", "m4", "f1", "f2", "m5"),
    "e": ("m1", "m2", "f2", "m3", "m4", "f1", "f3", "m5"),
    "f": ("m1", "m2", "f1", "m3", "f2", "m4", "f3", "m5", "f4", "m6"),
    "g": ("m1", "m2", "m3", "f1", "f2", "m4", "f3", "m5", "f4", "m6"),
    "h": ("m1", "m2", "m3", "m4", "f4", "m5", "f1", "f2", "f3", "m6"),
    "i": ("m1", "f1", "m2", "m3", "m4", "f3", "m5", "f2", "f4", "m6"),
}
CAPS: Final = (1024, 2048, 4096)  # MiB: 1/16, 1/8, 1/4 of the 16 GiB device
THRESHOLDS: Final = (0.5, 0.6, 0.7, 0.8)
# every comparison the outcome rests on clears a quarter of a 1/64th of the cap (at least
# 4 MiB; on a GPU the cap differs from the trace's by 4 KiB, see
# tests/questions/families/torch_trace.py)
MARGIN_UNITS: Final = 0.25


def _units(n: int) -> tuple[tuple[int, ...], ...]:
    """Sizes x1..xn in 1/64ths of the cap, strictly increasing (n = 5 or 6)."""
    cached = n - 2
    starts = (4, 7, 10) if cached == 3 else (2, 4, 6)
    steps = ((1, 3), (1, 4), (1, 3))[: cached - 1]
    out = []
    for u1, *gaps, d_live, d_last in product(starts, *steps, (3, 8, 14), (2, 7)):
        u = [u1]
        for gap in gaps:
            u.append(u[-1] + gap)
        u.append(u[-1] + d_live)
        u.append(u[-1] + d_last)
        out.append(tuple(u))
    return tuple(out)


class Gc(NamedTuple):
    """The outcome of the collection at the last request."""

    reserved: int  # before it
    threshold: int
    ages: dict[int, int]  # cached block index -> age
    freed: tuple[int, ...]  # indexes released
    reclaimed: int


def ages(template: tuple[str, ...]) -> dict[int, int]:
    """Each freed block's age at the last request: large-pool requests since its free."""
    clock, base = 0, {}
    for step in template:
        if step[0] == "m":
            clock += 1
        else:
            base[int(step[1])] = clock
    return {i: clock - b for i, b in base.items()}


def collect(
    sizes: dict[int, float], age: dict[int, int], target: float, *, strict: bool = False
) -> tuple[int, ...]:
    """torch's passes: free every block at least the average age, until `target` is met
    (`strict`: only those older than the average, a misconception)."""
    left = dict(age)
    freed: list[int] = []
    reclaimed = 0.0
    while reclaimed < target and left:
        mean = sum(left.values()) / len(left)
        passed = [
            i
            for i in sorted(left, key=lambda i: sizes[i])
            if (left[i] > mean if strict else left[i] >= mean)
        ]
        for i in passed:
            freed.append(i)
            reclaimed += sizes[i]
            del left[i]
        if not passed:
            break
    return tuple(freed)


def outcome(sizes: dict[int, int], template: tuple[str, ...], cap: int, t: float) -> Gc:
    last = len(sizes)
    reserved = sum(sizes[i] for i in range(1, last))
    threshold = int(t * cap)
    age = ages(template)
    freed = collect({i: float(v) for i, v in sizes.items()}, age, reserved - threshold)
    return Gc(reserved, threshold, age, freed, sum(sizes[i] for i in freed))


def _valid(units: tuple[int, ...], age: dict[int, int], t64: float) -> bool:
    """In 1/64ths of the cap (exact: every size and the cap are whole 2 MiB multiples)."""
    last = len(units)
    cached = {i: float(units[i - 1]) for i in age}
    reserved = sum(units[:-1])
    before_live = sum(units[:-2])
    if not (before_live + MARGIN_UNITS <= t64 and reserved >= t64 + MARGIN_UNITS):
        return False  # the collection must come at the last request, not before
    freed = collect(cached, age, reserved - t64)
    reclaimed = sum(cached[i] for i in freed)
    return (
        abs(reclaimed - (reserved - t64)) >= MARGIN_UNITS
        and reserved - reclaimed + units[last - 1] + MARGIN_UNITS <= 64  # fits, no retry
        and 0 < len(freed) < len(cached)  # something, not everything: the ages decide
    )


def _cases() -> tuple[tuple[str, int, float, tuple[int, ...]], ...]:
    out = []
    for name, template in TEMPLATES.items():
        age = ages(template)
        units = _units(sum(1 for s in template if s[0] == "m"))
        for t in THRESHOLDS:
            valid = [u for u in units if _valid(u, age, 64 * t)]
            out += [(name, cap, t, u) for cap in CAPS for u in valid]
    return tuple(out)


SPACE = Space((grid("collect", case=_cases(), ask=(RESERVED, FREED)),))
PROMPT = Text(
    "PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:{t}, a {c} cap (memory fraction); "
    "uint8 tensors: {ops}. What does {api} report then?"
)


def _ops(template: tuple[str, ...], sizes: dict[int, int]) -> list[Op]:
    return [
        malloc(f"x{s[1]}", sizes[int(s[1])]) if s[0] == "m" else free(f"x{s[1]}") for s in template
    ]


def _names(indexes: tuple[int, ...] | list[int]) -> Localized:
    return Join((f"x{i}" for i in indexes), ", ", last=AND) if indexes else Text("none")


def _steps(g: Gc, last: int, cap: int, t: float, ask: str, answer: int) -> list[Localized]:
    mean = sum(g.ages.values()) / len(g.ages)
    return [
        Text(
            "At {x}'s cache miss reserved ({r}) > {t} × {c} = {h}: garbage collection runs.",
            x=f"x{last}",
            r=size(g.reserved),
            t=Number(t, 1),
            c=size(cap),
            h=Size(g.threshold),
        ),
        Text(
            "Idle ages (large-pool requests): {ages}; mean {m}. Passes free those that old or "
            "older until under {h}: {names} ({n}).",
            ages=Join((f"x{i} {a}" for i, a in sorted(g.ages.items())), ", ", last=AND),
            m=Number(mean, 0 if mean == int(mean) else 2),
            h=Size(g.threshold),
            names=_names(g.freed),
            n=size(g.reclaimed),
        ),
        conclusion(ask),
    ]


def _strategy(sizes: dict[int, int], order: list[int], target: int) -> tuple[int, ...]:
    """Blocks freed one at a time in `order` until `target` bytes are reclaimed."""
    freed, reclaimed = [], 0
    for i in order:
        if reclaimed >= target:
            break
        freed.append(i)
        reclaimed += sizes[i]
    return tuple(freed)


# short names of the errors, for the rare note that combines two
LABELS: Final[dict[str, Localized]] = {
    "gc-frees-every-cached-block": Text("everything freed"),
    "gc-stops-at-the-target": Text("just enough freed"),
    "gc-frees-largest-first": Text("largest first"),
    "gc-frees-smallest-first": Text("smallest first"),
    "gc-frees-newest-first": Text("newest first"),
    "gc-strictly-older-than-average": Text("strictly older only"),
    "gc-counts-the-new-request": Text("the request counted"),
    "gc-frees-one-block": Text("one block"),
    "gc-single-pass": Text("one pass"),
    "garbage-collection-ignored": Text("no collection"),
    "gc-collects-live-blocks": Text("live blocks collected"),
    "gc-frees-everything-held": Text("all it holds freed"),
    "request-not-counted": Text("the new segment left out"),
    "only-the-request-left": Text("all it holds freed"),
}


def _candidates(g: Gc, sizes: dict[int, int], inputs: dict[str, Any], ask: str) -> list[Candidate]:
    last = len(sizes)
    live, request = sizes[last - 1], sizes[last]
    target = g.reserved - g.threshold
    cached = sorted(g.ages)
    by_age = sorted(cached, key=lambda i: (-g.ages[i], sizes[i]))
    floats = {i: float(v) for i, v in sizes.items()}

    def value(freed: tuple[int, ...] | list[int]) -> int:
        reclaimed = sum(sizes[i] for i in freed)
        return reclaimed if ask == FREED else g.reserved - reclaimed + request

    mean = sum(g.ages.values()) / len(g.ages)
    strict = collect(floats, g.ages, target, strict=True)
    with_request = collect(floats, g.ages, g.reserved + request - g.threshold)
    x_last = f"x{last}"
    x_live = f"x{last - 1}"
    models: list[tuple[str, tuple[int, ...] | list[int], Localized]] = [
        (
            "gc-frees-every-cached-block",
            cached,
            Text("frees every cached block, as empty_cache() would; only old ones go."),
        ),
        (
            "gc-stops-at-the-target",
            _strategy(sizes, by_age, target),
            Text("frees the oldest until just enough; a pass frees all past the average."),
        ),
        (
            "gc-frees-largest-first",
            _strategy(sizes, sorted(cached, key=lambda i: -sizes[i]), target),
            Text("frees the largest first; age, not size, decides."),
        ),
        (
            "gc-frees-smallest-first",
            _strategy(sizes, cached, target),
            Text("frees the smallest first; age, not size, decides."),
        ),
        (
            "gc-frees-newest-first",
            _strategy(sizes, sorted(cached, key=lambda i: (g.ages[i], sizes[i])), target),
            Text("frees the most recently freed first; the longest idle go."),
        ),
        (
            "gc-strictly-older-than-average",
            strict,
            Text("only blocks older than the average; at least as old is enough."),
        ),
        (
            "gc-counts-the-new-request",
            with_request,
            Text("counts {x} in reserved; the check uses reserved before it.", x=x_last),
        ),
        (
            "gc-frees-one-block",
            by_age[:1],
            Text("frees a single block; a pass frees every block past the average."),
        ),
        (
            "gc-single-pass",
            [i for i in cached if g.ages[i] >= mean],
            Text("stops after one pass; passes go on until under the threshold."),
        ),
    ]
    out = [
        Candidate(
            "garbage-collection-ignored",
            replay_value(inputs, conf=""),
            Text("the figure without the threshold: nothing collected."),
            LABELS["garbage-collection-ignored"],
        )
    ]
    out += [Candidate(name, value(freed), why, LABELS[name]) for name, freed, why in models]
    collects_live = Text("collects live {x} too; only cached free blocks are collected.", x=x_live)
    if ask == FREED:
        out += [
            Candidate(
                "gc-collects-live-blocks",
                g.reclaimed + live,
                collects_live,
                LABELS["gc-collects-live-blocks"],
            ),
            Candidate(
                "gc-frees-everything-held",
                g.reserved,
                Text("frees all it holds, live {x} too; only cached free blocks go.", x=x_live),
                LABELS["gc-frees-everything-held"],
            ),
        ]
    else:
        out += [
            Candidate(
                "gc-collects-live-blocks",
                g.reserved - g.reclaimed - live + request,
                collects_live,
            ),
            Candidate(
                "request-not-counted",
                g.reserved - g.reclaimed,
                Text("leaves out {x}'s new segment.", x=x_last),
                LABELS["request-not-counted"],
            ),
            Candidate(
                "only-the-request-left",
                request,
                Text("frees all it holds, live {x} too; only cached free blocks go.", x=x_live),
                LABELS["only-the-request-left"],
            ),
        ]
    return out


def build(variant: str, params: dict[str, Any]) -> Draft:
    name, cap_mib, t, units = params["case"]
    ask = str(params["ask"])
    cap = int(cap_mib) * MIB
    template = TEMPLATES[name]
    sizes = {i + 1: u * cap // 64 for i, u in enumerate(units)}
    conf = f"garbage_collection_threshold:{t}"
    ops = _ops(template, sizes)
    inputs, run = replay_ops(ops, ask, conf=conf, memory_fraction=cap / TOTAL_MEMORY)
    answer = run.value(ask)
    g = outcome(sizes, template, cap, t)
    expected = g.reclaimed if ask == FREED else g.reserved - g.reclaimed + sizes[len(sizes)]
    if answer != expected:  # the family's account must be the simulator's
        raise AssertionError(f"gc-threshold {params}: simulator {answer}, account {expected}")
    prompt = PROMPT.fill(t=str(t), c=size(cap), ops=ops_text(ops), api=api(ask))
    return trace_draft(
        "allocator-config",
        3,
        inputs,
        prompt,
        _steps(g, len(sizes), cap, t, ask, answer),
        answer,
        _candidates(g, sizes, inputs, ask),
        (CONF_DOCS, ALLOCATOR_SOURCE, STATS_DOCS),
    )


FAMILY = trace_family(
    id="gc-threshold",
    topic="allocator-config",
    difficulty=(3, 3),
    description=(
        "garbage_collection_threshold under a memory-fraction cap: which idle cached "
        "segments a cache miss reclaims (by age, pass after pass), what stays reserved and "
        "what was released"
    ),
    space=SPACE,
    build=build,
    # a collection frees some cached blocks: most misconceptions free more or fewer, so
    # the answer sits inside; the ends are drawn more often where they are possible
    rank_weights=(1.6, 0.7, 0.7, 1.6),
)
