"""The oom-inactive-split report: what happened to the request, and the remedies.

Worded from the figures only: the outcome (a hole reused, a new segment, an OOM) is what
the allocator's counters say happened, and the limit stated is cap − reserved.
"""

from __future__ import annotations

from typing import Any

from gpu_runner.demos._context import RunContext

MiB = 1 << 20


def outcome_lines(ctx: RunContext, m: dict[str, Any], oom_sentence: str) -> list[str]:
    t = ctx.t
    request, cap, room = m["request_bytes"], m["cap_bytes"], m["room_under_cap_bytes"]
    at = m["at_request"]
    largest = m["largest_hole_bytes"]
    lines = [
        t(
            "A fragmented layout under a {cap} cap (one {segment} segment, every other "
            "50 MiB block free), then a {request} request:",
            cap=ctx.size(cap),
            segment=ctx.mib(cap - room),
            request=ctx.size(request),
        )
    ]
    small = t(
        "; a request of 1 MiB or less goes to the small pool, whose 2 MiB "
        "segments never use the large pool's holes"
    )
    limit = t(
        "A request fails here once its segment (its size rounded up to 2 MiB) "
        "exceeds cap − reserved = {room}.",
        room=ctx.mib(room),
    )
    if m["outcome"] == "reused-hole":
        return [
            *lines,
            t(
                "It fits a free {largest} hole: the block is split there, no new segment, "
                "no OOM. Above {largest} it would need a new segment. {limit}",
                largest=ctx.mib(largest),
                limit=limit,
            ),
        ]
    if m["outcome"] == "new-segment":
        return [
            *lines,
            t(
                "It fits no hole (largest {largest}{small_pool}), so the allocator took a "
                "new {segment} segment under the cap: reserved {reserved} of {cap}, no "
                "OOM. {limit}",
                largest=ctx.mib(largest),
                small_pool=small if request <= MiB else "",
                segment=ctx.size(m["new_segment_bytes"]),
                reserved=ctx.mib(at["reserved_bytes"]),
                cap=ctx.mib(cap),
                limit=limit,
            ),
        ]
    other = m["other_allocations_bytes"]
    return [
        *lines,
        f"`{oom_sentence}`",
        t(
            "- retries {num_alloc_retries}, OOMs {num_ooms}: no hole fits (largest "
            "{largest}), a new segment would pass the cap ({room} left), and the "
            "retry can release only whole free segments — the one {reserved_bytes} "
            "segment holds live tensors.",
            num_alloc_retries=at["num_alloc_retries"],
            num_ooms=at["num_ooms"],
            largest=ctx.mib(largest),
            room=ctx.mib(room),
            reserved_bytes=ctx.mib(at["reserved_bytes"]),
        ),
        t(
            "- 1. `memory_summary()`: Non-releasable memory `{inactive_split_bytes}` "
            "(inactive split blocks)",
            inactive_split_bytes=ctx.mib(at["inactive_split_bytes"]),
        ),
        t(
            "- 2. `memory_snapshot()`: largest free block `{largest}` < {request}",
            largest=ctx.mib(largest),
            request=ctx.mib(request),
        ),
        t(
            "- 3. other allocations, `(total − free) − reserved` from `mem_get_info()`: {other}",
            other=f"`{ctx.mib(other)}`"
            if other is not None
            else t("n/a (the simulated device has no CUDA context)"),
        ),
    ]


def _remedy(ctx: RunContext, r: dict[str, Any]) -> str:
    t = ctx.t
    if r["outcome"] == "oom":
        return t(
            "still OOM (reserved {reserved_bytes})",
            reserved_bytes=ctx.mib(r["reserved_bytes"]),
        )
    return t(
        "succeeds: {released_bytes} released, {new_device_bytes} newly reserved, "
        "retries {num_alloc_retries}, reserved {reserved_bytes}",
        released_bytes=ctx.mib(r["released_bytes"]),
        new_device_bytes=ctx.mib(r["new_device_bytes"]),
        num_alloc_retries=r["num_alloc_retries"],
        reserved_bytes=ctx.mib(r["reserved_bytes"]),
    )


def remedy_lines(ctx: RunContext, m: dict[str, Any]) -> list[str]:
    t = ctx.t
    merged, retried = m["after_freeing_live_tensors"], m["retry"]
    exp, split = m["remedies"]["expandable_segments"], m["remedies"]["max_split_size_mb"]
    return [
        t("Remedies, each on the same layout:"),
        t(
            "- `empty_cache()` with the odd tensors alive: reserved stays "
            "`{reserved_after_empty_cache_with_live_tensors}` (it releases only "
            "segments whose blocks are all free).",
            reserved_after_empty_cache_with_live_tensors=ctx.mib(
                m["reserved_after_empty_cache_with_live_tensors"]
            ),
        ),
        t(
            "- free the tensors that pin the segment: the holes merge (inactive "
            "split {inactive_split_bytes}) and the request is served from the cache "
            "with {new_device_allocs} new cudaMalloc.",
            inactive_split_bytes=ctx.mib(merged["inactive_split_bytes"]),
            new_device_allocs=retried["new_device_allocs"],
        ),
        t(
            "- `PYTORCH_CUDA_ALLOC_CONF={conf}`: {remedy} (the free pages under the "
            "holes are unmapped and new pages mapped at the end of the range).",
            conf=exp["conf"],
            remedy=_remedy(ctx, exp),
        ),
        t(
            "- `PYTORCH_CUDA_ALLOC_CONF={split}`: {remedy} (the 800 MiB block is "
            "never split, so each 50 MiB tensor gets its own segment and the retry "
            "releases the free ones).",
            split=split["conf"].split(",")[-1],
            remedy=_remedy(ctx, split),
        ),
    ]
