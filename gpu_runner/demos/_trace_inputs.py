"""The `inputs` of a generated allocator question: checked, bounded, in canonical form.

A question family writes its scenario as
``{"kind": "allocator-trace", "total_memory": <bytes>, "conf": "<PYTORCH_CUDA_ALLOC_CONF>",
"memory_fraction": <float or null>, "ops": [["malloc", name, bytes], ["free", name],
["empty_cache"], ...], "ask": "<a memory_stats() key>"}``. `check_trace_inputs` is the
`allocator-trace` demo's `JsonParam` validator: it runs in the bot (before a run is
recorded), in the executor and in the child, so everything here is pure Python (the
simulator's config parser and statistic names, no torch). Anything outside the bounds
gets one `DemoRequestError` naming the value and the fix.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cache
from typing import Any

from gpu_runner.demos._registry import DemoRequestError

KIND = "allocator-trace"
MAX_OPS = 64
MAX_OP_BYTES = 64 << 30  # 64 GiB per malloc
MAX_TOTAL_MEMORY = 1 << 40  # 1 TiB; a GPU run also needs total_memory <= the device's
MIN_TOTAL_MEMORY = 1 << 20
MAX_NAME = 64
MAX_CONF = 512
KEYS = ("kind", "total_memory", "conf", "memory_fraction", "ops", "ask")
SHAPE = (
    'write {"kind": "allocator-trace", "total_memory": <bytes>, "conf": "<alloc conf>", '
    '"memory_fraction": <0..1 or null>, "ops": [["malloc", "a", <bytes>], ["free", "a"], '
    '["empty_cache"]], "ask": "<memory_stats key>"}'
)


@cache
def stat_keys() -> frozenset[str]:
    """Every key of torch's `memory_stats()`, as the simulator reports them."""
    from gpu_runner.sim import CachingAllocator

    return frozenset(CachingAllocator(MIN_TOTAL_MEMORY).memory_stats())


def check_trace_inputs(value: object, demo: str) -> dict[str, Any]:
    """The canonical inputs, or `DemoRequestError` for the first thing out of bounds."""
    where = f"{demo}: inputs"
    if not isinstance(value, Mapping):
        raise DemoRequestError(f"{where} must be a JSON object; {SHAPE}")
    unknown = sorted(str(k) for k in value if k not in KEYS)
    missing = [k for k in KEYS if k not in value]
    if unknown or missing:
        what = "; ".join(
            part
            for part in (
                f"unknown key(s) {', '.join(map(repr, unknown))}" if unknown else "",
                f"missing key(s) {', '.join(map(repr, missing))}" if missing else "",
            )
            if part
        )
        raise DemoRequestError(f"{where}: {what}; {SHAPE}")
    if value["kind"] != KIND:
        raise DemoRequestError(f"{where}.kind is {value['kind']!r}; it must be {KIND!r}")
    total = _integer(value["total_memory"], f"{where}.total_memory")
    if not MIN_TOTAL_MEMORY <= total <= MAX_TOTAL_MEMORY:
        raise DemoRequestError(
            f"{where}.total_memory={total} is out of range; use {MIN_TOTAL_MEMORY} (1 MiB) "
            f"to {MAX_TOTAL_MEMORY} (1 TiB) bytes, at most the GPU's memory"
        )
    conf = _conf(value["conf"], f"{where}.conf")
    fraction = _fraction(value["memory_fraction"], f"{where}.memory_fraction")
    ops = _ops(value["ops"], f"{where}.ops")
    ask = value["ask"]
    if not isinstance(ask, str) or ask not in stat_keys():
        raise DemoRequestError(
            f"{where}.ask={ask!r} is not a torch.cuda.memory_stats() key; use one such as "
            "'reserved_bytes.all.current', 'segment.all.current' or 'num_ooms'"
        )
    return {
        "kind": KIND,
        "total_memory": total,
        "conf": conf,
        "memory_fraction": fraction,
        "ops": ops,
        "ask": ask,
    }


def _integer(raw: object, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise DemoRequestError(f"{where}={raw!r} is not a whole number of bytes")
    if isinstance(raw, float) and not (math.isfinite(raw) and raw.is_integer()):
        raise DemoRequestError(f"{where}={raw!r} is not a whole number of bytes")
    return int(raw)


def _conf(raw: object, where: str) -> str:
    from gpu_runner.sim import AllocatorConfigError, parse_conf

    if not isinstance(raw, str) or len(raw) > MAX_CONF:
        raise DemoRequestError(
            f"{where} must be a PYTORCH_CUDA_ALLOC_CONF string of at most {MAX_CONF} "
            'characters ("" for the defaults)'
        )
    try:
        parse_conf(raw)
    except AllocatorConfigError as exc:
        raise DemoRequestError(f"{where}={raw!r} is refused: {exc}") from None
    return raw


def _fraction(raw: object, where: str) -> float | None:
    if raw is None:
        return None
    if (
        isinstance(raw, bool)
        or not isinstance(raw, int | float)
        or not math.isfinite(raw)
        or not 0 < raw <= 1
    ):
        raise DemoRequestError(
            f"{where}={raw!r} is out of range; use a number in (0, 1] or null for no cap"
        )
    return float(raw)


def _ops(raw: object, where: str) -> list[list[Any]]:
    # Tuples too: a question built in Python may hand its inputs over before any JSON.
    if not isinstance(raw, list | tuple) or not 1 <= len(raw) <= MAX_OPS:
        count = len(raw) if isinstance(raw, list | tuple) else type(raw).__name__
        raise DemoRequestError(
            f"{where} has {count} entries; give a list of 1 to {MAX_OPS} operations"
        )
    live: set[str] = set()
    out: list[list[Any]] = []
    for i, op in enumerate(raw):
        at = f"{where}[{i}]"
        if (
            not isinstance(op, list | tuple)
            or not op
            or op[0] not in ("malloc", "free", "empty_cache")
        ):
            raise DemoRequestError(
                f'{at}={op!r} is not an operation; use ["malloc", name, bytes], '
                '["free", name] or ["empty_cache"]'
            )
        kind = op[0]
        arity = {"malloc": 3, "free": 2, "empty_cache": 1}[kind]
        if len(op) != arity:
            raise DemoRequestError(f"{at}={op!r}: {kind} takes {arity - 1} argument(s)")
        if kind == "empty_cache":
            out.append(["empty_cache"])
            continue
        name = op[1]
        if not isinstance(name, str) or not 1 <= len(name) <= MAX_NAME or not name.isprintable():
            raise DemoRequestError(
                f"{at}: the tensor name {name!r} must be printable text of 1 to {MAX_NAME} "
                "characters"
            )
        if kind == "free":
            if name not in live:
                raise DemoRequestError(
                    f"{at} frees {name!r}, which is not allocated at that point; free only a "
                    "name an earlier malloc allocated (and no later free released)"
                )
            live.discard(name)
            out.append(["free", name])
            continue
        if name in live:
            raise DemoRequestError(
                f"{at} allocates {name!r} again while it is live; free it first or use another name"
            )
        nbytes = _integer(op[2], f"{at} size")
        if not 0 <= nbytes <= MAX_OP_BYTES:
            raise DemoRequestError(
                f"{at} asks for {nbytes} bytes; each malloc takes 0 to {MAX_OP_BYTES} (64 GiB)"
            )
        live.add(name)
        out.append(["malloc", name, nbytes])
    return out


def effective_cap(inputs: Mapping[str, Any]) -> int | None:
    """The byte cap the simulator applies to reserved memory (None: only the device)."""
    from gpu_runner.sim import parse_conf

    fraction = inputs["memory_fraction"]
    if fraction is None:
        fraction = parse_conf(inputs["conf"]).per_process_memory_fraction
    if fraction >= 1.0:
        return None
    return int(fraction * float(inputs["total_memory"]))


# The question in the default: why is memory still reserved after everything was freed?
DEFAULT_INPUTS = {
    "kind": KIND,
    "total_memory": 1 << 30,
    "conf": "",
    "memory_fraction": 0.5,
    "ops": [
        ["malloc", "a", 300 << 20],
        ["malloc", "b", 5 << 20],
        ["malloc", "c", 700 << 10],
        ["free", "a"],
        ["malloc", "d", 200 << 20],
        ["malloc", "e", 320 << 20],
        ["free", "b"],
        ["empty_cache"],
    ],
    "ask": "reserved_bytes.all.current",
}
