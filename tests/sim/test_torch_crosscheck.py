"""Cross-checks against the installed torch (CPU builds suffice; skipped without torch).

torch's allocator-config parser and its ``memory_summary`` formatter run without a GPU,
so the simulator's messages and table can be compared with the real ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gpu_runner.sim import AllocatorConfigError, CachingAllocator, GiB, MiB, parse_conf


@pytest.fixture
def torch_settings() -> Iterator[Any]:
    torch = pytest.importorskip("torch")
    setter = getattr(torch._C, "_accelerator_setAllocatorSettings", None)
    if setter is None:
        pytest.skip("this torch has no _accelerator_setAllocatorSettings (older than 2.9)")
    yield setter
    setter("")


@pytest.mark.parametrize(
    "conf",
    [
        "max_split_size_mb:10",
        "max_non_split_rounding_mb:19",
        "garbage_collection_threshold:1.0",
        "roundup_power2_divisions:3",
        "roundup_power2_divisions:[256:3]",
        "roundup_power2_divisions:[300:2]",
        "expandable_segments:true",
        "large_segment_size_mb:10",
        "max_split_size_mb:30,large_segment_size_mb:40",
    ],
)
def test_config_errors_read_like_the_installed_torch(torch_settings: Any, conf: str) -> None:
    with pytest.raises(ValueError) as real:
        torch_settings(conf)
    with pytest.raises(AllocatorConfigError) as simulated:
        parse_conf(conf)
    assert str(simulated.value) == str(real.value).split("\n")[0]


@pytest.mark.parametrize(
    "conf",
    [
        "expandable_segments:True,max_split_size_mb:256",
        "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
        "garbage_collection_threshold:0.6,max_non_split_rounding_mb:40",
    ],
)
def test_valid_configs_are_accepted_by_both(torch_settings: Any, conf: str) -> None:
    torch_settings(conf)
    parse_conf(conf)


def test_memory_summary_is_character_for_character_torchs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    torch = pytest.importorskip("torch")
    alloc = CachingAllocator(80 * GiB, conf="max_split_size_mb:600")
    blocks = [alloc.malloc(n) for n in (1, 1000, MiB + 1, 5 * MiB, 100 * MiB + 1, 3 * GiB)]
    alloc.free(blocks[2])
    stats = alloc.memory_stats()
    monkeypatch.setattr(torch.cuda.memory, "memory_stats", lambda device=None: stats)
    for abbreviated in (False, True):
        expected = torch.cuda.memory.memory_summary(device=0, abbreviated=abbreviated)
        assert alloc.memory_summary(abbreviated=abbreviated) == expected
