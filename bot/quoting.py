"""Echoing untrusted input in messages, bounded.

Every refusal names the bad value; a value from a file or a chat message can be megabytes
long, or a nested structure whose ``repr`` never ends (a list that holds itself, or a
shared sub-list repeated a billion times over). These helpers cut what is echoed, so a
message stays one short line whatever came in.
"""

from __future__ import annotations

import reprlib
from typing import Final

SHOWN_CHARS: Final = 60
ELLIPSIS: Final = "…"


class _BoundedRepr(reprlib.Repr):
    def repr_int(self, x: int, level: int) -> str:
        # repr() of a huge int is slow, and refused past 4,300 digits.
        if x.bit_length() > 128:
            return f"<{x.bit_length()}-bit integer>"
        return super().repr_int(x, level)


_REPR = _BoundedRepr()
# Two levels and six items per container bound the work on any structure, shared or not.
_REPR.maxlevel = 2
_REPR.maxstring = SHOWN_CHARS
_REPR.maxother = SHOWN_CHARS
_REPR.maxlong = 40
for _name in ("maxlist", "maxtuple", "maxdict", "maxset", "maxfrozenset", "maxdeque", "maxarray"):
    setattr(_REPR, _name, 6)


def cut(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` itself, or its first ``limit`` characters and an ellipsis."""
    return text if len(text) <= limit else text[:limit] + ELLIPSIS


def quoted(value: object, limit: int = SHOWN_CHARS) -> str:
    """A bounded ``repr`` of ``value``: strings quoted like ``{value!r}``, cut after ``limit``
    characters; containers show a few items, two levels deep."""
    if isinstance(value, str):
        return repr(cut(value, limit))
    return cut(_REPR.repr(value), limit)


__all__ = ["ELLIPSIS", "SHOWN_CHARS", "cut", "quoted"]
