"""``memory_snapshot()``: torch's list of segment dictionaries (spec 2.3)."""

from __future__ import annotations

from typing import Literal, TypedDict

from gpu_runner.sim._state import AllocatorState, Block


class BlockInfo(TypedDict):
    address: int
    size: int
    requested_size: int
    state: Literal["active_allocated", "active_pending_free", "inactive"]
    frames: list[dict[str, object]]


class SegmentInfo(TypedDict):
    device: int
    address: int
    total_size: int
    allocated_size: int
    active_size: int
    requested_size: int
    stream: int
    segment_type: Literal["small", "large"]
    segment_pool_id: tuple[int, int]
    is_expandable: bool
    frames: list[dict[str, object]]
    blocks: list[BlockInfo]


def _segment_info(head: Block) -> tuple[SegmentInfo, Block | None]:
    """The mapped run starting at `head`, and the block after it."""
    seg = head.seg
    info: SegmentInfo = {
        "device": 0,
        "address": head.ptr,
        "total_size": 0,
        "allocated_size": 0,
        "active_size": 0,
        "requested_size": 0,
        "stream": head.stream,
        "segment_type": "small" if seg.small else "large",
        "segment_pool_id": (0, 0),
        "is_expandable": seg.expandable,
        "frames": [],
        "blocks": [],
    }
    block: Block | None = head
    while block is not None and block.mapped:
        info["blocks"].append(
            {
                "address": block.ptr,
                "size": block.size,
                "requested_size": block.requested_size,
                "state": "active_allocated" if block.allocated else "inactive",
                "frames": [],
            }
        )
        info["total_size"] += block.size
        if block.allocated:
            info["allocated_size"] += block.size
            info["active_size"] += block.size
            info["requested_size"] += block.requested_size
        block = block.next
    return info, block


def build_snapshot(st: AllocatorState) -> list[SegmentInfo]:
    result: list[SegmentInfo] = []
    for ptr in sorted(st.segments):
        block = st.segments[ptr].head
        while block is not None:
            if not block.mapped:
                block = block.next
                continue
            info, block = _segment_info(block)
            result.append(info)
    return result
