"""Replay one generated trace on CUDA through torch; print memory_stats()[ask].

    PYTORCH_CUDA_ALLOC_CONF=<conf> python -m tests.questions.families.torch_trace '<inputs json>'

One fresh process per trace (torch reads the allocator settings once). A memory fraction
is re-expressed for the real device: the trace's cap ``int(f * total_memory)`` plus 4 KiB,
over the GPU's own total (segments are whole 2 MiB multiples, so the slack changes
nothing). The last stdout line is ``{"value": ..., "total_memory": ...}``.
"""

from __future__ import annotations

import contextlib
import json
import sys

import torch


def main() -> None:
    inputs = json.loads(sys.argv[1])
    torch.cuda.init()
    total = torch.cuda.get_device_properties(0).total_memory
    if inputs["memory_fraction"] is not None:
        cap = int(inputs["memory_fraction"] * inputs["total_memory"])
        torch.cuda.set_per_process_memory_fraction((cap + 4096) / total)
    live: dict[str, torch.Tensor] = {}
    for op in inputs["ops"]:
        if op[0] == "malloc":
            with contextlib.suppress(torch.cuda.OutOfMemoryError):
                live[op[1]] = torch.empty(op[2], dtype=torch.uint8, device="cuda")
        elif op[0] == "free":
            del live[op[1]]
        else:
            torch.cuda.empty_cache()
    value = torch.cuda.memory_stats().get(inputs["ask"], 0)
    print(json.dumps({"value": value, "total_memory": total}))


if __name__ == "__main__":
    main()
