"""The sample snapshot (``quizbot sim sample-snapshot OUT``): a training loop whose batch
grows from 8 to 16 on a 768 MiB GPU, recorded by the simulator in torch's
``_dump_snapshot()`` format. Each batch keeps one activation per layer and frees a larger
temporary; the next, larger batch fits none of the holes, so the default allocator runs
out of memory once (batch 16) while ``expandable_segments:True`` does not — what the
memory clinic finds and recommends. Built by code, the same bytes every time.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from gpu_runner.sim._errors import OutOfMemoryError
from gpu_runner.sim._sizes import MiB
from gpu_runner.sim.recording import RecordingDevice

SAMPLE_GPU = 768 * MiB
LAYERS = 16
BATCHES = range(8, 17)


def sample_snapshot() -> dict[str, Any]:
    """The sample, as the dict torch's ``_snapshot()`` returns."""
    device = RecordingDevice(SAMPLE_GPU)
    for batch in BATCHES:
        kept: list[int] = []
        try:
            for _ in range(LAYERS):
                kept.append(device.malloc(batch * 2 * MiB + 4096))  # the layer's activation
                device.free(device.malloc(3 * batch * 2 * MiB + 4096))  # its temporary
        except OutOfMemoryError:
            pass  # recorded as an "oom" event; the loop goes on with the next batch
        for handle in kept:
            device.free(handle)
    return device.dump()


def write_sample(path: Path) -> int:
    """Write the sample to `path` (never over an existing file); its size in bytes."""
    data = pickle.dumps(sample_snapshot(), protocol=4)
    with path.open("xb") as out:
        out.write(data)
    return len(data)


__all__ = ["SAMPLE_GPU", "sample_snapshot", "write_sample"]
