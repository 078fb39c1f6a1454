"""Byte units, the allocator's size constants and its two size functions, torch's own
``format_size`` (the OOM message's), and ``parse_size`` for the command line. Sizes shown
to a reader in a locale go through `bot.formats`.

The constants are those of ``c10/core/AllocatorConfig.h``; `round_size` and
`allocation_size` follow ``CUDACachingAllocator.cpp`` line for line (spec 1.1-1.4).
"""

from __future__ import annotations

import re

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
TiB = 1024 * GiB

MIN_BLOCK_SIZE = 512  # kMinBlockSize: every request is a multiple of this
SMALL_SIZE = MiB  # kSmallSize: rounded requests up to here use the small pool
SMALL_BUFFER = 2 * MiB  # kSmallBuffer: small-pool segment and expandable page
MIN_LARGE_ALLOC = 10 * MiB  # kMinLargeAlloc: below this a large request gets a packed segment
ROUND_LARGE = 2 * MiB  # kRoundLarge: bigger segments are rounded up to this
LARGE_BUFFER = 20 * MiB  # kLargeBuffer: default large_segment_size
SIZE_MAX = 2**64 - 1  # "no max_split_size": every size compares below it
ONE_EXA_BYTES = 2**60  # requests this large fail before reaching the allocator
ROUNDUP_INTERVALS = 16  # roundup_power2_divisions has one value per power of two from 1 MiB


def division_index(size: int) -> int:
    """The interval of `roundup_power2_divisions` that `size` falls in (0 to 15)."""
    return min(max(size.bit_length() - 1 - 20, 0), ROUNDUP_INTERVALS - 1)


def roundup_power2_next_division(size: int, divisions: int) -> int:
    """Round `size` up to the next of `divisions` equal steps between two powers of two."""
    if size & (size - 1) == 0:
        return size
    floor = 1 << (size.bit_length() - 1)
    step = floor >> (divisions.bit_length() - 1)
    if step == 0:
        return floor << 1
    rounded = size & ~(step - 1)
    return size if rounded == size else rounded + step


def round_size(size: int, divisions: tuple[int, ...]) -> int:
    """The block size the allocator hands out for a request of `size` bytes."""
    if size < MIN_BLOCK_SIZE:
        return MIN_BLOCK_SIZE
    d = divisions[division_index(size)]
    if d > 1 and size > MIN_BLOCK_SIZE * d:
        return roundup_power2_next_division(size, d)
    return MIN_BLOCK_SIZE * ((size + MIN_BLOCK_SIZE - 1) // MIN_BLOCK_SIZE)


def allocation_size(size: int, large_segment_size: int = LARGE_BUFFER) -> int:
    """Bytes of a new segment for a rounded request (`get_allocation_size`)."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return large_segment_size
    return ROUND_LARGE * ((size + ROUND_LARGE - 1) // ROUND_LARGE)


def format_size(size: int) -> str:
    """Torch's ``format_size`` (used in the OOM message): ``20.00 MiB``, ``512 bytes``."""
    if size <= 1024:
        return f"{size} bytes"
    if size <= MiB:
        return f"{size / 1024:.2f} KiB"
    if size <= GiB:
        return f"{size / MiB:.2f} MiB"
    return f"{size / GiB:.2f} GiB"


_UNITS = {
    "": 1,
    "b": 1,
    "k": KiB,
    "kb": 1000,
    "kib": KiB,
    "m": MiB,
    "mb": 1000**2,
    "mib": MiB,
    "g": GiB,
    "gb": 1000**3,
    "gib": GiB,
    "t": TiB,
    "tb": 1000**4,
    "tib": TiB,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str) -> int:
    """Parse ``80GiB``, ``141GB``, ``512MiB`` or a plain byte count into bytes."""
    match = _SIZE_RE.match(text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise ValueError(
            f"invalid size {text!r}: write a number with an optional unit, e.g. 80GiB, 141GB, "
            "512MiB or 1048576"
        )
    value = float(match.group(1)) * _UNITS[unit]
    if value <= 0:
        raise ValueError(f"invalid size {text!r}: it must be greater than zero")
    return int(value)
