"""The worked figures of the allocator spec (section 3), reproduced exactly."""

from __future__ import annotations

import pytest

from gpu_runner.sim import CachingAllocator, GiB, MiB, OutOfMemoryError
from tests.sim.scenarios import (
    SimDevice,
    q1_fragmentation,
    q3_expandable,
    q3_oom_despite_reserved,
    q4_growing_batch,
    q7_empty_cache_live,
    q8_reserved_vs_allocated,
    s11_reuse,
)

H200 = 140 * GiB


def test_s11_sixteens_then_thirty_twos_double_the_reservation_natively() -> None:
    figures = s11_reuse(SimDevice(H200))
    assert figures["reserved_after_16s"] == 128 * MiB
    assert figures["reserved_bytes.all.current"] == 256 * MiB
    assert figures["segment.all.current"] == 12


def test_s11_expandable_segments_reuse_the_same_pages() -> None:
    figures = s11_reuse(SimDevice(H200, "expandable_segments:True"))
    assert figures["reserved_after_16s"] == 140 * MiB  # 7 pages of 20 MiB
    assert figures["reserved_bytes.all.current"] == 140 * MiB
    assert figures["segment.all.current"] == 0  # expandable segments are not counted


def test_q8_table_of_requested_allocated_reserved_and_inactive_split_bytes() -> None:
    figures = q8_reserved_vs_allocated(SimDevice(H200))
    assert figures["rows"] == [
        [1, 512, 2_097_152, 2_096_640],
        [1_001, 1_536, 2_097_152, 2_095_616],
        [1_049_578, 1_050_624, 23_068_672, 22_018_048],
        [6_292_458, 6_293_504, 23_068_672, 16_775_168],
        [111_150_059, 111_151_616, 130_023_424, 18_871_808],
        [648_020_971, 648_022_528, 666_894_336, 18_871_808],
    ]
    assert figures["after_free"]["allocated_bytes.all.current"] == 0
    assert figures["after_free"]["reserved_bytes.all.current"] == 666_894_336  # 636 MiB
    assert figures["after_free"]["segment.all.current"] == 4  # 2 + 20 + 102 + 512 MiB
    assert figures["after_empty_cache"]["reserved_bytes.all.current"] == 0


def test_q1_fragmentation_layout_and_index() -> None:
    figures = q1_fragmentation(SimDevice(H200))
    assert figures["allocated_bytes.all.current"] == 400 * MiB
    assert figures["reserved_bytes.all.current"] == 800 * MiB
    assert figures["segment.all.current"] == 1
    assert figures["inactive_split_bytes.all.current"] == 400 * MiB
    assert figures["inactive_split.all.current"] == 8
    assert figures["free_blocks"] == 8
    assert figures["largest_free"] == 50 * MiB
    assert figures["total_free"] == 400 * MiB
    assert figures["index"] == 0.875
    assert figures["blocks"] == [
        [(50 * MiB, "inactive" if i % 2 == 0 else "active_allocated") for i in range(16)]
    ]


def test_q3_oom_although_400_mib_are_reserved_but_unallocated() -> None:
    figures = q3_oom_despite_reserved(SimDevice(H200))
    assert figures["oom"] == {
        "tried": "300.00 MiB",
        "allowed": "1.00 GiB",
        "allocated": "400.00 MiB",
        "unallocated": "400.00 MiB",
    }
    after = figures["after_oom"]
    assert after["num_alloc_retries"] == 1
    assert after["num_ooms"] == 1
    assert after["inactive_split_bytes.all.current"] == 400 * MiB
    assert after["segment.all.current"] == 1


def test_q3_remediation_steps() -> None:
    figures = q3_oom_despite_reserved(SimDevice(H200))
    # empty_cache cannot release a segment pinned by live blocks
    assert figures["after_empty_cache_pinned"]["reserved_bytes.all.current"] == 800 * MiB
    unpinned = figures["after_unpin"]
    assert unpinned["blocks"] == [[(800 * MiB, "inactive")]]
    assert unpinned["inactive_split_bytes.all.current"] == 0
    assert unpinned["allocated_bytes.all.current"] == 0
    assert unpinned["reserved_bytes.all.current"] == 800 * MiB
    retry = figures["retry"]  # served from the cache, split 300 + 500, no new segment
    assert retry["blocks"] == [[(300 * MiB, "active_allocated"), (500 * MiB, "inactive")]]
    assert retry["segment.all.current"] == 1
    assert retry["num_ooms"] == 1
    assert figures["empty_cache_with_live"]["reserved_bytes.all.current"] == 800 * MiB


def test_q3_succeeds_with_expandable_segments_by_remapping_free_pages() -> None:
    figures = q3_expandable(SimDevice(H200, "expandable_segments:True"))
    assert figures["num_ooms"] == 0
    assert figures["num_alloc_retries"] == 1
    assert figures["num_device_free"] == 8  # one unmap per free hole
    assert figures["reserved_bytes.all.current"] == 780 * MiB  # 800 - 8 x 40 + 300
    assert figures["inactive_split_bytes.all.current"] == 0


def test_q3_oom_message_follows_torch_template() -> None:
    alloc = CachingAllocator(H200)
    alloc.set_per_process_memory_fraction((1024 * MiB + 4096) / H200)
    with pytest.raises(OutOfMemoryError) as info:
        alloc.malloc(1100 * MiB)
    message = str(info.value)
    assert message.startswith(
        "CUDA out of memory. Tried to allocate 1.07 GiB. GPU 0 has a total capacity of "
        "140.00 GiB of which 140.00 GiB is free. 1.00 GiB allowed; Of the allocated memory "
        "0 bytes is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated. "
        "If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
        "documentation for Memory Management  (https://docs.pytorch.org/"
    )
    assert info.value.alloc_size == 1100 * MiB
    assert info.value.allowed == 1024 * MiB + 4096
    assert isinstance(info.value, RuntimeError)  # like torch.cuda.OutOfMemoryError


@pytest.mark.parametrize(
    ("conf", "cap", "expected"),
    [
        ("", 768 * MiB, {"ooms": [[16, 14, "98.00 MiB"]], "retries": 3, "reserved": 702 * MiB}),
        ("expandable_segments:True", 768 * MiB, {"ooms": [], "retries": 0, "reserved": 620 * MiB}),
        ("", None, {"ooms": [], "retries": 0, "reserved": 1046 * MiB}),
        ("expandable_segments:True", None, {"ooms": [], "retries": 0, "reserved": 620 * MiB}),
    ],
    ids=["native-capped", "expandable-capped", "native", "expandable"],
)
def test_q4_growing_batch_predictions(
    conf: str, cap: int | None, expected: dict[str, object]
) -> None:
    figures = q4_growing_batch(SimDevice(H200, conf), cap)
    assert figures["ooms"] == expected["ooms"]
    assert figures["num_ooms"] == len(figures["ooms"])
    assert figures["num_alloc_retries"] == expected["retries"]
    assert figures["peak_reserved"] == expected["reserved"]
    if not figures["ooms"]:
        assert f"{figures['peak_allocated'] / MiB:.2f}" == "608.07"


def test_q7_empty_cache_keeps_a_live_block_and_releases_it_once_dead() -> None:
    figures = q7_empty_cache_live(SimDevice(H200))
    assert figures["held"]["allocated_bytes.all.current"] == 1024 * MiB
    assert figures["held"]["reserved_bytes.all.current"] == 1024 * MiB
    assert figures["held"]["free_delta"] == -1024 * MiB
    assert figures["freed"]["allocated_bytes.all.current"] == 0
    assert figures["freed"]["reserved_bytes.all.current"] == 1024 * MiB
    assert figures["freed"]["free_delta"] == -1024 * MiB  # cached memory is still used
    assert figures["released"]["reserved_bytes.all.current"] == 0
    assert figures["released"]["free_delta"] == 0
    assert figures["one_live"]["reserved_bytes.all.current"] == 20 * MiB
    assert figures["one_live"]["inactive_split_bytes.all.current"] == 16 * MiB
    assert figures["none_live"]["reserved_bytes.all.current"] == 0
