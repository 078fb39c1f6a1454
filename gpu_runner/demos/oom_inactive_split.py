"""Q3 — an OOM although reserved memory looks unused: inactive split blocks.

Q1's layout under a 1 GiB cap, then one request larger than every hole. The retry path
releases cached segments, but the only segment is split (live tensors pin it), so the
request fails. Then the remedies, and what `empty_cache()` can and cannot do.
"""

from __future__ import annotations

import re
from typing import Any

from gpu_runner.demos import _plot
from gpu_runner.demos._alloc import AllocatorOOM, free_blocks, open_device, stat
from gpu_runner.demos._context import DemoOutput, RunContext, mib, simulated_note, title_line
from gpu_runner.demos._registry import Demo, DemoKind, Param

MiB = 1 << 20
BLOCKS = 16
BLOCK = 50 * MiB
CAP = 1024 * MiB


def run(ctx: RunContext) -> DemoOutput:
    request = ctx.int("request_mib") * MiB
    dev = open_device(ctx)
    dev.cap(CAP)
    big = dev.alloc(BLOCKS * BLOCK)
    dev.free(big)
    tensors = [dev.alloc(BLOCK) for _ in range(BLOCKS)]
    for h in tensors[::2]:
        dev.free(h)
    live = tensors[1::2]

    message = ""
    failed = None
    try:
        failed = dev.alloc(request)
    except AllocatorOOM as exc:
        message = str(exc)
    s = dev.stats()
    snap = dev.snapshot()
    holes = free_blocks(snap)
    at_oom: dict[str, Any] = {
        "oom": bool(message),
        "num_alloc_retries": stat(s, "num_alloc_retries"),
        "num_ooms": stat(s, "num_ooms"),
        "allocated_bytes": dev.allocated(),
        "reserved_bytes": dev.reserved(),
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
    if failed is not None:
        dev.free(failed)

    # Remedy 1 does not work: empty_cache() keeps a segment with any live block.
    dev.empty_cache()
    reserved_after_empty = dev.reserved()
    # Remedy 2: free the pinning tensors; the holes merge into one free segment again.
    for h in live:
        dev.free(h)
    s2 = dev.stats()
    merged = {
        "allocated_bytes": dev.allocated(),
        "reserved_bytes": dev.reserved(),
        "inactive_split_bytes": stat(s2, "inactive_split_bytes.all.current"),
    }
    allocs_before = stat(s2, "num_device_alloc")
    retry = dev.alloc(request)
    s3 = dev.stats()
    retried = {
        "succeeded": True,
        "new_device_allocs": stat(s3, "num_device_alloc") - allocs_before,
        "reserved_bytes": dev.reserved(),
    }
    dev.empty_cache()
    retried["reserved_after_empty_cache"] = dev.reserved()
    dev.free(retry)

    metrics = {
        "request_bytes": request,
        "cap_bytes": CAP,
        "at_oom": at_oom,
        "oom_message": message,
        "other_allocations_bytes": other,
        "reserved_after_empty_cache_with_live_tensors": reserved_after_empty,
        "after_freeing_live_tensors": merged,
        "retry": retried,
        "simulated": dev.simulated,
    }
    t = ctx.tr
    first = _first_sentence(message)
    lines = [
        title_line(
            ctx,
            "OOM with reserved memory unused",
            "OOM ενώ υπάρχει αχρησιμοποίητη reserved μνήμη",
            dev.simulated,
        )
    ]
    if message:
        lines += [
            t(
                f"Q1's layout under a {mib(CAP)} cap, then a {mib(request)} request:",
                f"Η διάταξη του Q1 με όριο {mib(CAP)}, μετά ένα αίτημα {mib(request)}:",
            ),
            f"`{first}`",
            t(
                f"- retries {at_oom['num_alloc_retries']}, OOMs {at_oom['num_ooms']}; "
                f"allocated `{mib(at_oom['allocated_bytes'])}`, reserved "
                f"`{mib(at_oom['reserved_bytes'])}` in {at_oom['segments']} segment",
                f"- επαναλήψεις {at_oom['num_alloc_retries']}, OOM {at_oom['num_ooms']}· "
                f"allocated `{mib(at_oom['allocated_bytes'])}`, reserved "
                f"`{mib(at_oom['reserved_bytes'])}` σε {at_oom['segments']} τμήμα",
            ),
            t(
                f"- 1. `memory_summary()`: Non-releasable memory "
                f"`{mib(at_oom['inactive_split_bytes'])}` (inactive split blocks)",
                f"- 1. `memory_summary()`: Non-releasable memory "
                f"`{mib(at_oom['inactive_split_bytes'])}` (ανενεργά split μπλοκ)",
            ),
            t(
                f"- 2. `memory_snapshot()`: largest free block "
                f"`{mib(at_oom['largest_free_bytes'])}` < {mib(request)}",
                f"- 2. `memory_snapshot()`: μεγαλύτερο ελεύθερο μπλοκ "
                f"`{mib(at_oom['largest_free_bytes'])}` < {mib(request)}",
            ),
            t(
                "- 3. other allocations, `(total − free) − reserved` from `mem_get_info()`: "
                + (f"`{mib(other)}`" if other is not None else "n/a (simulated device)"),
                "- 3. άλλες δεσμεύσεις, `(total − free) − reserved` από το `mem_get_info()`: "
                + (f"`{mib(other)}`" if other is not None else "n/a (προσομοίωση)"),
            ),
        ]
    else:
        lines.append(
            t(
                f"The {mib(request)} request fits a hole: no OOM. Try a request above 50 MiB.",
                f"Το αίτημα {mib(request)} χωράει σε κενό: δεν έγινε OOM. Δοκιμάστε "
                "αίτημα πάνω από 50 MiB.",
            )
        )
    lines += [
        t(
            f"`empty_cache()` with the odd tensors alive: reserved stays "
            f"`{mib(reserved_after_empty)}`. Freeing them merges the holes "
            f"(inactive split {mib(merged['inactive_split_bytes'])}); the retry then succeeds "
            f"from the cache with {retried['new_device_allocs']} new cudaMalloc.",
            f"`empty_cache()` με τους μονούς τανυστές ζωντανούς: το reserved μένει "
            f"`{mib(reserved_after_empty)}`. Όταν αποδεσμευτούν, τα κενά ενώνονται "
            f"(inactive split {mib(merged['inactive_split_bytes'])}) και η επανάληψη "
            f"πετυχαίνει από την cache με {retried['new_device_allocs']} νέα cudaMalloc.",
        ),
    ]
    if dev.simulated:
        lines.append(simulated_note(ctx))

    fig, (ax,) = _plot.figure(8.0, 2.4)
    _plot.segment_map(
        ax,
        snap,
        title=t(
            f"At the OOM: {mib(request)} asked, largest hole {mib(at_oom['largest_free_bytes'])}",
            f"Στο OOM: ζητήθηκαν {mib(request)}, μεγαλύτερο κενό "
            f"{mib(at_oom['largest_free_bytes'])}",
        ),
        legend=(t("allocated", "δεσμευμένο"), t("free (inactive split)", "ελεύθερο (split)")),
    )
    return DemoOutput(
        "\n".join(lines), metrics, _plot.to_png(fig), dev.device_line(), dev.simulated
    )


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
    title_el="OOM παρότι η reserved μνήμη φαίνεται αχρησιμοποίητη",
    kind=DemoKind.ALLOCATOR,
    run=run,
    params=(Param("request_mib", int, 1, 700, 300, "size of the request that fails, MiB"),),
)
