"""Q3 — an OOM although reserved memory looks unused: inactive split blocks.

Q1's layout under a 1 GiB cap (one 800 MiB segment, every other 50 MiB block free), then
one request. It either reuses a hole (≤ the largest hole), takes a new segment (while its
segment fits in cap − reserved), or fails: the retry path can release only whole free
segments, and the only segment is split. Then the remedies: free the pinning tensors,
`expandable_segments:True`, `max_split_size_mb`, and what `empty_cache()` cannot do.
"""

from __future__ import annotations

import re
from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._alloc import (
    AllocatorOOM,
    Device,
    Handle,
    device_label,
    free_blocks,
    open_device,
    stat,
    usage,
)
from gpu_runner.demos._context import DemoOutput, RunContext
from gpu_runner.demos._oom_text import outcome_lines, remedy_lines
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20
BLOCKS = 16
BLOCK = 50 * MiB
CAP = 1024 * MiB
EXPANDABLE = "expandable_segments:True"
# Blocks this large are never split: the 800 MiB segment stays whole, the 50 MiB tensors get
# segments of their own, and the OOM retry can release the free ones.
MAX_SPLIT = "expandable_segments:False,max_split_size_mb:256"


def layout(dev: Device) -> list[Handle]:
    """Q1's layout under the cap; returns the live (odd) tensors."""
    dev.cap(CAP)
    dev.free(dev.alloc(BLOCKS * BLOCK))  # one 800 MiB segment, kept in the cache
    tensors = [dev.alloc(BLOCK) for _ in range(BLOCKS)]
    for h in tensors[::2]:
        dev.free(h)
    return tensors[1::2]


def attempt(dev: Device, request: int) -> tuple[dict[str, Any], Handle | None, str]:
    """One request on the layout: its outcome, the handle when it succeeded, the OOM text."""
    before = dev.stats()
    try:
        handle: Handle | None = dev.alloc(request)
        message = ""
    except AllocatorOOM as exc:
        handle, message = None, str(exc)
    after = dev.stats()
    new_bytes = stat(after, "reserved_bytes.all.allocated") - stat(
        before, "reserved_bytes.all.allocated"
    )
    outcome = "oom" if handle is None else ("new-segment" if new_bytes else "reused-hole")
    return (
        {
            "outcome": outcome,
            "reserved_before_bytes": stat(before, "reserved_bytes.all.current"),
            "new_device_bytes": new_bytes,
            "released_bytes": stat(after, "reserved_bytes.all.freed")
            - stat(before, "reserved_bytes.all.freed"),
            "num_alloc_retries": stat(after, "num_alloc_retries"),
            "num_ooms": stat(after, "num_ooms"),
            "reserved_bytes": dev.reserved(),
        },
        handle,
        message,
    )


def remedy(dev: Device, conf: str, request: int) -> dict[str, Any]:
    """The same layout and request in a fresh allocator with `conf`."""
    dev.restart(conf)
    live = layout(dev)
    result, handle, _ = attempt(dev, request)
    for h in [*live, *([handle] if handle is not None else [])]:
        dev.free(h)
    return {"conf": conf, **result}


def run(ctx: RunContext) -> DemoOutput:
    request = ctx.int("request_mib") * MiB
    dev = open_device(ctx)
    live = layout(dev)
    layout_snapshot = dev.snapshot()
    result, handle, message = attempt(dev, request)
    s = dev.stats()
    holes = free_blocks(dev.snapshot())
    at_request: dict[str, Any] = {
        "oom": bool(message),
        "num_alloc_retries": stat(s, "num_alloc_retries"),
        "num_ooms": stat(s, "num_ooms"),
        **usage(dev),
        "inactive_split_bytes": stat(s, "inactive_split_bytes.all.current"),
        "segments": stat(s, "segment.all.current"),
        "largest_free_bytes": max(holes, default=0),
        "non_releasable_in_summary": _non_releasable(dev.summary()),
    }
    free_now = dev.mem_free()
    other = None
    if not dev.simulated and free_now is not None:
        # What the driver counts as used beyond PyTorch's cache: CUDA context and the like.
        other = (dev.total_memory - free_now) - dev.reserved()
    if handle is not None:
        dev.free(handle)

    # empty_cache() does not help: it keeps every segment with a live block.
    dev.empty_cache()
    reserved_after_empty = dev.reserved()
    # Freeing the pinning tensors merges the holes into one free segment again.
    for h in live:
        dev.free(h)
    s2 = dev.stats()
    merged = {
        **usage(dev),
        "inactive_split_bytes": stat(s2, "inactive_split_bytes.all.current"),
    }
    allocs_before = stat(s2, "num_device_alloc")
    retry = dev.alloc(request)
    retried = {
        "succeeded": True,
        "new_device_allocs": stat(dev.stats(), "num_device_alloc") - allocs_before,
        "reserved_bytes": dev.reserved(),
    }
    dev.empty_cache()
    retried["reserved_after_empty_cache"] = dev.reserved()
    dev.free(retry)
    # Expandable segments first: the max_split_size_mb setting is not undone afterwards.
    remedies = {
        "expandable_segments": remedy(dev, EXPANDABLE, request),
        "max_split_size_mb": remedy(dev, MAX_SPLIT, request),
    }

    metrics = {
        "request_bytes": request,
        "cap_bytes": CAP,
        "outcome": result["outcome"],
        "room_under_cap_bytes": CAP - result["reserved_before_bytes"],
        "largest_hole_bytes": max(free_blocks(layout_snapshot), default=0),
        "new_segment_bytes": result["new_device_bytes"],
        "at_request": at_request,
        "oom_message": message,
        "other_allocations_bytes": other,
        "reserved_after_empty_cache_with_live_tensors": reserved_after_empty,
        "after_freeing_live_tensors": merged,
        "retry": retried,
        "remedies": remedies,
        "simulated": dev.simulated,
    }
    label = device_label(ctx, dev)
    lines = [
        *outcome_lines(ctx, metrics, _first_sentence(message)),
        *remedy_lines(ctx, metrics),
    ]
    fig, (ax,) = _plot.figure(8.0, 3.0)
    _request_map(ctx, ax, layout_snapshot, metrics)
    return ctx.output(ctx.t("OOM with reserved memory unused"), lines, metrics, fig, label)


def _request_map(ctx: RunContext, ax: Any, snapshot: Any, m: dict[str, Any]) -> None:
    """The segment map at the request, the room under the cap, the cap and the request."""
    t = ctx.t
    request, cap = m["request_bytes"], m["cap_bytes"]
    reserved = cap - m["room_under_cap_bytes"]
    outcome = m["outcome"]
    largest = m["largest_hole_bytes"]
    title = {
        "oom": t(
            "{request} → OOM: largest hole {largest}, room under the cap {room_under_cap_bytes}",
            request=ctx.mib(request),
            largest=ctx.mib(largest),
            room_under_cap_bytes=ctx.mib(m["room_under_cap_bytes"]),
        ),
        "new-segment": t(
            "{request} fits no hole: a new {new_segment_bytes} segment under the cap",
            request=ctx.mib(request),
            new_segment_bytes=ctx.size(m["new_segment_bytes"]),
        ),
        "reused-hole": t(
            "{request} reuses a {largest} hole: no OOM, no new segment",
            request=ctx.size(request),
            largest=ctx.mib(largest),
        ),
    }[outcome]
    _plot.segment_map(
        ax,
        snapshot,
        title=title,
        legend=(
            t("allocated block"),
            t("free hole (inactive split)"),
        ),
        locale=ctx.locale,
    )
    # Row 1: the request, where the allocator put it (a hole) or would put it (a new segment).
    if outcome == "reused-hole":
        start = next(
            (int(b["address"]) - int(seg["address"]))
            for seg in snapshot
            for b in seg["blocks"]
            if b["state"] == "inactive" and int(b["size"]) >= request
        )
    else:
        start = reserved
    colour = _plot.LIMIT if outcome == "oom" else _plot.ACCENT
    ax.barh(1, request / MiB, left=start / MiB, color=colour, height=0.6)
    ax.axvspan(reserved / MiB, cap / MiB, color=_plot.UNMAPPED, alpha=0.6, zorder=0)
    ax.text(
        (reserved + cap) / 2 / MiB,
        -0.45,
        t(
            "room: {mib}",
            mib=ctx.mib(cap - reserved),
        ),
        ha="center",
        va="bottom",
        fontsize=8,
    )
    _plot.mark_level(
        ax,
        cap / MiB,
        t(
            "cap {cap}",
            cap=ctx.size(cap),
        ),
        axis="x",
    )
    ax.set_yticks([0, 1])
    ax.set_yticklabels(
        [
            t(
                "segment {reserved}",
                reserved=ctx.mib(reserved),
            ),
            t(
                "request {request}",
                request=ctx.size(request),
            ),
        ]
    )
    ax.set_ylim(1.6, -0.6)
    ax.set_xlim(0, max(cap, start + request) / MiB * 1.04)


def _first_sentence(message: str) -> str:
    """torch's OOM text from "Tried to allocate" to "... unallocated." (the figures)."""
    line = message.splitlines()[0] if message else ""
    start = line.find("Tried to allocate")
    end = line.find("unallocated.")
    if start >= 0 and end > start:
        return line[start : end + len("unallocated.")]
    return line if len(line) <= 400 else line[:400] + "…"


def _non_releasable(summary: str) -> str:
    match = re.search(r"Non-releasable memory\s*\|\s*([^|]+)\|", summary)
    return match.group(1).strip() if match else ""


DEMO = Demo(
    id="oom-inactive-split",
    title="OOM although reserved memory looks unused",
    kind=DemoKind.ALLOCATOR,
    run=run,
    params=(Param("request_mib", int, 1, 700, 300, "size of the request, MiB"),),
)
