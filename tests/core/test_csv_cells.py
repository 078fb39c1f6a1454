"""Spreadsheet-safe CSV cells: no cell starts a formula, and the guard comes off exactly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.csv_cells import FORMULA_STARTS, guard_cell, guarded_row, unguard_cell

# Texts that start with quotes and formula characters are the ones that need care.
texts = st.one_of(
    st.text(),
    st.builds(
        lambda quotes, start, rest: "'" * quotes + start + rest,
        st.integers(0, 3),
        st.sampled_from(FORMULA_STARTS),
        st.text(max_size=20),
    ),
)


@given(texts)
def test_a_guarded_cell_never_starts_a_formula_and_unguards_to_the_text(text: str) -> None:
    cell = guard_cell(text)
    assert cell[:1] not in FORMULA_STARTS or cell == ""
    assert unguard_cell(cell) == text


def test_each_formula_start_is_guarded_and_plain_text_is_left_alone() -> None:
    for start in "=+-@\t\r":
        assert guard_cell(start + "1") == "'" + start + "1"
    assert guard_cell("'=x") == "''=x"  # it already looks guarded: one more quote
    assert guard_cell("it's -1") == "it's -1" and guard_cell("'quoted'") == "'quoted'"
    assert unguard_cell("'quoted'") == "'quoted'"
    assert guarded_row(["-1", -1, 2.5, "=A1"]) == ["'-1", -1, 2.5, "'=A1"]
