"""CSV cells a spreadsheet opens as text, never as a formula.

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a formula
(or becomes one) when Excel, LibreOffice or Google Sheets opens the file: member-written
text such as ``=HYPERLINK(...)`` or ``+cmd|' /C calc'!A0`` would run as the admin who opened
the export. Every CSV the project writes goes through `guard_cell`, which puts a ``'`` in
front of such a cell (OWASP's CSV injection advice; the spreadsheet shows the text without
it), and the CSV reader takes it off again with `unguard_cell`, so export -> import gives
back the same text: a choice ``-1`` is ``'-1`` in the file and ``-1`` once imported.

A cell that already starts with quotes before one of those characters (``'=x``) gets one
more, so `unguard_cell` removing exactly one quote is exact for every text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

GUARD: Final = "'"
# The OWASP list, and their full-width forms, which some spreadsheets read as the same.
FORMULA_STARTS: Final = "=+-@\t\r\uff1d\uff0b\uff0d\uff20"
_NEEDS_GUARD = re.compile(f"'*[{re.escape(FORMULA_STARTS)}]")
_GUARDED = re.compile(f"'+[{re.escape(FORMULA_STARTS)}]")


def guard_cell(text: str) -> str:
    """`text` as a cell no spreadsheet evaluates."""
    return GUARD + text if _NEEDS_GUARD.match(text) else text


def unguard_cell(cell: str) -> str:
    """The text `guard_cell` was given, from the cell it made (other cells unchanged)."""
    return cell[1:] if _GUARDED.match(cell) else cell


def guarded_row(cells: Iterable[object]) -> list[object]:
    """A row for `csv.writer`: text cells guarded, numbers as they are."""
    return [guard_cell(c) if isinstance(c, str) else c for c in cells]


__all__ = ["FORMULA_STARTS", "GUARD", "guard_cell", "guarded_row", "unguard_cell"]
