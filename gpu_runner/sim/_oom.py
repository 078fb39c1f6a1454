"""The ``OutOfMemoryError`` message, in torch's words and with torch's figures (spec 1.8)."""

from __future__ import annotations

from gpu_runner.sim._errors import OutOfMemoryError
from gpu_runner.sim._sizes import format_size
from gpu_runner.sim._state import AllocatorState

_DOCS_LINK = (
    "https://docs.pytorch.org/docs/stable/notes/cuda.html"
    "#optimizing-memory-usage-with-pytorch-cuda-alloc-conf"
)


def out_of_memory(st: AllocatorState, alloc_size: int, message: str = "") -> OutOfMemoryError:
    """The error ``malloc`` raises after every retry failed; `alloc_size` is the segment size.

    NVML's per-process lines ("Process … has … memory in use") are left out: the simulated
    device has no other processes to report.
    """
    allocated = st.small_pool.b_cur + st.large_pool.b_cur
    reserved = st.small_pool.r_cur + st.large_pool.r_cur
    free = st.device_free()
    allowed = st.allowed_memory_maximum
    if not message:
        allowed_info = "" if allowed is None else f"{format_size(allowed)} allowed; "
        message = (
            f"CUDA out of memory. Tried to allocate {format_size(alloc_size)}. GPU 0 has a "
            f"total capacity of {format_size(st.total_memory)} of which {format_size(free)} "
            f"is free. {allowed_info}Of the allocated memory {format_size(allocated)} is "
            f"allocated by PyTorch, and {format_size(reserved - allocated)} is reserved by "
            "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
            f"documentation for Memory Management  ({_DOCS_LINK})"
        )
    return OutOfMemoryError(
        message,
        alloc_size=alloc_size,
        total=st.total_memory,
        free=free,
        allowed=allowed,
        allocated=allocated,
        reserved=reserved,
    )
