"""Hostile question files for team packs: each is answered with one line naming the file
and the fix, within 200 MB (measured in a fresh process; the time is
bench/hostile_inputs.py's)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from questions.tabular import CSV_COLUMNS
from tests.hostile import Measured, assert_bounded, measure

HEADER = ",".join(CSV_COLUMNS) + "\n"
# Each file's name -> (its text, made when used; the words its refusal must contain).
ATTACKS: dict[str, tuple[Callable[[], str], str]] = {
    # Within the size bound, but half a million rows: refused by the count, before any
    # row is validated.
    "rows.csv": (lambda: HEADER + "p,a,b,,,,A,e,t,1,en,\n" * 390_000, "more than 20,000 rows"),
    # One field of 7 MB: the CSV reader's field bound.
    "field.csv": (
        lambda: HEADER + '"' + "x" * 7_000_000 + '",a,b,,,,A,e,t,1,en,\n',
        "line 2: a field is over 131,072 characters",
    ),
    # Nesting a million levels deep.
    "deep.json": (lambda: "[" * 1_000_000, "not JSON"),
    # Within 2 MiB, 600,000 results.
    "many.json": (
        lambda: '{"response_code": 0, "results": [' + ",".join(["{}"] * 600_000) + "]}",
        "600,000 results, over 20,000",
    ),
}


def measure_import(path: Path) -> Measured:
    """A team-pack import of `path` in a fresh interpreter: its problems, time and memory
    (also `bench/hostile_inputs.py`'s)."""
    return measure(
        "from pathlib import Path\nfrom questions.team import TeamQuestions\n",
        f"return [p for _, r in TeamQuestions().read_path(Path({str(path)!r})) "
        "for p in r.problems]",
    )


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_hostile_import_is_answered_within_200_mb(tmp_path: Path, name: str) -> None:
    make, words = ATTACKS[name]
    (tmp_path / name).write_text(make())
    measured = measure_import(tmp_path / name)
    assert_bounded(measured)
    (line,) = measured.out
    assert words in line, line  # a row's line is prefixed with its file where it is shown


def test_a_file_over_its_bound_is_refused_by_its_size_alone(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(50 * 1024 * 1024)
    measured = measure_import(big)
    assert_bounded(measured)
    assert measured.out == [
        "big.json is 52.4 MB, over the 2 MiB limit for Open Trivia DB JSON files; split it "
        "into smaller files"
    ]
