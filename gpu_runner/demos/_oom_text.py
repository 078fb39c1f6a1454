"""The oom-inactive-split report: what happened to the request, and the remedies.

Worded from the figures only: the outcome (a hole reused, a new segment, an OOM) is what
the allocator's counters say happened, and the limit stated is cap − reserved.
"""

from __future__ import annotations

from typing import Any

from gpu_runner.demos._context import RunContext

MiB = 1 << 20


def outcome_lines(ctx: RunContext, m: dict[str, Any], oom_sentence: str) -> list[str]:
    t = ctx.tr
    request, cap, room = m["request_bytes"], m["cap_bytes"], m["room_under_cap_bytes"]
    at = m["at_request"]
    largest = m["largest_hole_bytes"]
    lines = [
        t(
            f"Q1's layout under a {ctx.size(cap)} cap (one {ctx.mib(cap - room)} segment, "
            f"every other 50 MiB block free), then a {ctx.size(request)} request:",
            f"Η διάταξη του Q1 με όριο {ctx.size(cap)} (ένα τμήμα {ctx.mib(cap - room)}, "
            f"ελεύθερο κάθε δεύτερο μπλοκ των 50 MiB), μετά ένα αίτημα {ctx.size(request)}:",
        )
    ]
    small = t(
        "; a request of 1 MiB or less goes to the small pool, whose 2 MiB segments never "
        "use the large pool's holes",
        "· ένα αίτημα έως 1 MiB πηγαίνει στο small pool, που με τα τμήματα των 2 MiB δεν "
        "χρησιμοποιεί τα κενά του large pool",
    )
    limit = t(
        f"A request fails here once its segment (its size rounded up to 2 MiB) exceeds "
        f"cap − reserved = {ctx.mib(room)}.",
        f"Εδώ ένα αίτημα αποτυγχάνει μόλις το τμήμα του (το μέγεθος στρογγυλεμένο προς τα "
        f"πάνω στα 2 MiB) ξεπεράσει όριο − δεσμευμένη = {ctx.mib(room)}.",
    )
    if m["outcome"] == "reused-hole":
        return [
            *lines,
            t(
                f"It fits a free {ctx.mib(largest)} hole: the block is split there, no new "
                f"segment, no OOM. Above {ctx.mib(largest)} it would need a new segment. " + limit,
                f"Χωράει σε ελεύθερο κενό {ctx.mib(largest)}: το μπλοκ χωρίζεται εκεί, χωρίς "
                f"νέο τμήμα και χωρίς OOM. Πάνω από {ctx.mib(largest)} θα χρειαζόταν νέο "
                "τμήμα. " + limit,
            ),
        ]
    if m["outcome"] == "new-segment":
        return [
            *lines,
            t(
                f"It fits no hole (largest {ctx.mib(largest)}"
                + (small if request <= MiB else "")
                + f"), so the allocator took a new {ctx.size(m['new_segment_bytes'])} segment "
                f"under the cap: reserved {ctx.mib(at['reserved_bytes'])} of "
                f"{ctx.mib(cap)}, no OOM. " + limit,
                f"Δεν χωράει σε κενό (το μεγαλύτερο {ctx.mib(largest)}"
                + (small if request <= MiB else "")
                + f"), οπότε ο allocator πήρε νέο τμήμα {ctx.size(m['new_segment_bytes'])} "
                f"κάτω από το όριο: δεσμευμένη (reserved) {ctx.mib(at['reserved_bytes'])} "
                f"από {ctx.mib(cap)}, χωρίς OOM. " + limit,
            ),
        ]
    other = m["other_allocations_bytes"]
    return [
        *lines,
        f"`{oom_sentence}`",
        t(
            f"- retries {at['num_alloc_retries']}, OOMs {at['num_ooms']}: no hole fits "
            f"(largest {ctx.mib(largest)}), a new segment would pass the cap "
            f"({ctx.mib(room)} left), and the retry can release only whole free segments — "
            f"the one {ctx.mib(at['reserved_bytes'])} segment holds live tensors.",
            f"- επαναπροσπάθειες {at['num_alloc_retries']}, OOM {at['num_ooms']}: κανένα κενό "
            f"δεν χωράει (το μεγαλύτερο {ctx.mib(largest)}), νέο τμήμα θα ξεπερνούσε το όριο "
            f"(απομένουν {ctx.mib(room)}) και η επαναπροσπάθεια αποδεσμεύει μόνο ολόκληρα "
            f"ελεύθερα τμήματα — το ένα τμήμα των {ctx.mib(at['reserved_bytes'])} έχει "
            "ζωντανούς τανυστές.",
        ),
        t(
            f"- 1. `memory_summary()`: Non-releasable memory "
            f"`{ctx.mib(at['inactive_split_bytes'])}` (inactive split blocks)",
            f"- 1. `memory_summary()`: Non-releasable memory "
            f"`{ctx.mib(at['inactive_split_bytes'])}` (ανενεργά split μπλοκ)",
        ),
        t(
            f"- 2. `memory_snapshot()`: largest free block `{ctx.mib(largest)}` < "
            f"{ctx.mib(request)}",
            f"- 2. `memory_snapshot()`: μεγαλύτερο ελεύθερο μπλοκ `{ctx.mib(largest)}` < "
            f"{ctx.mib(request)}",
        ),
        t(
            "- 3. other allocations, `(total − free) − reserved` from `mem_get_info()`: "
            + (
                f"`{ctx.mib(other)}`"
                if other is not None
                else "n/a (the simulated device has no CUDA context)"
            ),
            "- 3. άλλες δεσμεύσεις, `(total − free) − reserved` από το `mem_get_info()`: "
            + (
                f"`{ctx.mib(other)}`"
                if other is not None
                else "n/a (η προσομοιωμένη συσκευή δεν έχει CUDA context)"
            ),
        ),
    ]


def _remedy(ctx: RunContext, r: dict[str, Any]) -> str:
    t = ctx.tr
    if r["outcome"] == "oom":
        return t(
            f"still OOM (reserved {ctx.mib(r['reserved_bytes'])})",
            f"και πάλι OOM (δεσμευμένη {ctx.mib(r['reserved_bytes'])})",
        )
    return t(
        f"succeeds: {ctx.mib(r['released_bytes'])} released, "
        f"{ctx.mib(r['new_device_bytes'])} newly reserved, retries {r['num_alloc_retries']}, "
        f"reserved {ctx.mib(r['reserved_bytes'])}",
        f"πετυχαίνει: αποδεσμεύονται {ctx.mib(r['released_bytes'])}, δεσμεύονται εκ νέου "
        f"{ctx.mib(r['new_device_bytes'])}, επαναπροσπάθειες {r['num_alloc_retries']}, "
        f"δεσμευμένη {ctx.mib(r['reserved_bytes'])}",
    )


def remedy_lines(ctx: RunContext, m: dict[str, Any]) -> list[str]:
    t = ctx.tr
    merged, retried = m["after_freeing_live_tensors"], m["retry"]
    exp, split = m["remedies"]["expandable_segments"], m["remedies"]["max_split_size_mb"]
    return [
        t("Remedies, each on the same layout:", "Λύσεις, η καθεμία στην ίδια διάταξη:"),
        t(
            f"- `empty_cache()` with the odd tensors alive: reserved stays "
            f"`{ctx.mib(m['reserved_after_empty_cache_with_live_tensors'])}` (it releases only "
            "segments whose blocks are all free).",
            f"- `empty_cache()` με τους μονούς τανυστές ζωντανούς: η δεσμευμένη μένει "
            f"`{ctx.mib(m['reserved_after_empty_cache_with_live_tensors'])}` (αποδεσμεύει μόνο "
            "τμήματα με όλα τα μπλοκ ελεύθερα).",
        ),
        t(
            f"- free the tensors that pin the segment: the holes merge (inactive split "
            f"{ctx.mib(merged['inactive_split_bytes'])}) and the request is served from the "
            f"cache with {retried['new_device_allocs']} new cudaMalloc.",
            f"- αποδέσμευση των τανυστών που κρατούν το τμήμα: τα κενά ενώνονται (inactive "
            f"split {ctx.mib(merged['inactive_split_bytes'])}) και το αίτημα εξυπηρετείται "
            f"από την cache με {retried['new_device_allocs']} νέα cudaMalloc.",
        ),
        t(
            f"- `PYTORCH_CUDA_ALLOC_CONF={exp['conf']}`: {_remedy(ctx, exp)} (the free pages "
            "under the holes are unmapped and new pages mapped at the end of the range).",
            f"- `PYTORCH_CUDA_ALLOC_CONF={exp['conf']}`: {_remedy(ctx, exp)} (οι ελεύθερες "
            "σελίδες κάτω από τα κενά αποχαρτογραφούνται και νέες σελίδες χαρτογραφούνται "
            "στο τέλος της περιοχής).",
        ),
        t(
            f"- `PYTORCH_CUDA_ALLOC_CONF={split['conf'].split(',')[-1]}`: {_remedy(ctx, split)} "
            "(the 800 MiB block is never split, so each 50 MiB tensor gets its own segment and "
            "the retry releases the free ones).",
            f"- `PYTORCH_CUDA_ALLOC_CONF={split['conf'].split(',')[-1]}`: "
            f"{_remedy(ctx, split)} (το μπλοκ των 800 MiB δεν χωρίζεται ποτέ, οπότε κάθε "
            "τανυστής των 50 MiB παίρνει δικό του τμήμα και η επαναπροσπάθεια αποδεσμεύει τα "
            "ελεύθερα).",
        ),
    ]
