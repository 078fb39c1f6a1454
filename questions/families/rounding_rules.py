"""Rounding rules and misconceptions shared by `request-rounding`'s variants."""

from __future__ import annotations

from bot.i18n import Text


def up(n: int, step: int) -> int:
    """n rounded up to a multiple of step (at least one step)."""
    return max(step, -(-n // step) * step)


def next_power_of_two(n: int) -> int:
    return 1 << (n - 1).bit_length()


POWER_OF_TWO = Text("power-of-two rounding, which only roundup_power2_divisions does.")
ALIGNMENT = Text("256-byte rounding, cudaMalloc's alignment; blocks round to 512 B.")
PAGES = Text("4 KiB page rounding, as on the host; blocks round to 512 B.")
DIVISIONS = Text("roundup_power2_divisions:4 rounding (off by default).")
