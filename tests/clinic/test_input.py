"""Every bad file gets its own reason and one message that names the fix (in process)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from bot.clinic import Rejection, rejection
from bot.domain import Locale
from gpu_runner.clinic._input import Rejected, read_snapshot
from tests.clinic import snapshots
from tests.hostile import Measured, assert_bounded, measure


class RunsACommand:
    """A pickle that would run a shell command when loaded by plain pickle."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def bad_files(tmp_path: Path) -> dict[str, tuple[bytes, Rejection]]:
    good = pickle.dumps(snapshots.well_packed(2))
    marker = tmp_path / "ran"
    return {
        "text": (b"this is a text file, not a pickle\n" * 4, Rejection.NOT_PICKLE),
        "png": (b"\x89PNG\r\n\x1a\n" + bytes(64), Rejection.NOT_PICKLE),
        "empty": (b"", Rejection.NOT_PICKLE),
        "truncated": (good[: len(good) // 2], Rejection.TRUNCATED),
        "callable": (pickle.dumps({"device_traces": [RunsACommand(marker)]}), Rejection.REFUSED),
        "no device_traces": (pickle.dumps({"segments": []}), Rejection.NO_HISTORY),
        "empty device_traces": (
            pickle.dumps({"segments": [], "device_traces": [[], []]}),
            Rejection.NO_HISTORY,
        ),
        "segments only": (
            pickle.dumps(
                {
                    "segments": [],
                    "device_traces": [
                        [{"action": "segment_alloc", "addr": 0, "size": 2 << 20, "stream": 0}]
                    ],
                }
            ),
            Rejection.NO_HISTORY,
        ),
        "a list": (pickle.dumps([1, 2, 3]), Rejection.NOT_SNAPSHOT),
        "another dict": (pickle.dumps({"model": "resnet"}), Rejection.NOT_SNAPSHOT),
        "bad event": (
            pickle.dumps(
                {"segments": [], "device_traces": [[{"action": "alloc", "addr": "x", "size": 1}]]}
            ),
            Rejection.NOT_SNAPSHOT,
        ),
        "thousands of devices": (snapshots.repeated_by_reference(), Rejection.TOO_MANY_DEVICES),
        "repeated by reference": (
            snapshots.repeated_by_reference(devices=60),
            Rejection.REPEATED_ENTRIES,
        ),
        "alloc after repeats": (
            snapshots.repeated_by_reference(devices=64, alloc_last=True),
            Rejection.REPEATED_ENTRIES,
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "text",
        "png",
        "empty",
        "truncated",
        "callable",
        "no device_traces",
        "empty device_traces",
        "segments only",
        "a list",
        "another dict",
        "bad event",
        "thousands of devices",
        "repeated by reference",
        "alloc after repeats",
    ],
)
def test_each_bad_file_is_refused_with_its_reason(tmp_path: Path, case: str) -> None:
    data, reason = bad_files(tmp_path)[case]
    path = tmp_path / "upload.pickle"
    path.write_bytes(data)
    with pytest.raises(Rejected) as caught:
        read_snapshot(path, "job.pickle", 1 << 20, None)
    assert caught.value.reason is reason
    assert not (tmp_path / "ran").exists()  # nothing in the file ran


def test_a_snapshot_repeating_its_events_by_reference_is_refused_with_its_figures(
    tmp_path: Path,
) -> None:
    path = tmp_path / "upload.pickle"
    path.write_bytes(snapshots.repeated_by_reference(devices=60))
    with pytest.raises(Rejected) as caught:
        read_snapshot(path, "train.pickle", 100 << 20, None)
    detail = caught.value.detail
    assert (detail["what"], detail["count"]) == ("events", 1_200_000)
    assert detail["limit"] == path.stat().st_size // 16 + 1  # as `sim replay` bounds it
    en = str(rejection(caught.value.reason, Locale.EN, detail))
    el = str(rejection(caught.value.reason, Locale.EL, detail))
    assert "train.pickle lists 1,200,000 trace entries, more than a file of 0.6 MiB" in en
    assert "by reference" in en and "_dump_snapshot" in en
    assert "1.200.000 καταχωρίσεις" in el
    path.write_bytes(snapshots.repeated_by_reference())
    with pytest.raises(Rejected) as caught:
        read_snapshot(path, "train.pickle", 100 << 20, None)
    en = str(rejection(caught.value.reason, Locale.EN, caught.value.detail))
    assert "train.pickle has traces for 6,000 devices" in en and "at most 64" in en


RED_TEAM_DEVICES = (6000, 60)


def measure_read(path: Path) -> Measured:
    """The clinic's read of `path` in a fresh interpreter: the refusal's reason (or
    "accepted"), time and memory (also `bench/hostile_inputs.py`'s)."""
    return measure(
        "from pathlib import Path\nfrom gpu_runner.clinic._input import Rejected, read_snapshot\n",
        f"""
        try:
            read_snapshot(Path({str(path)!r}), "h.pickle", 100 << 20, None)
        except Rejected as exc:
            return str(exc.reason)
        return "accepted"
        """,
    )


@pytest.mark.parametrize("devices", RED_TEAM_DEVICES)
def test_the_red_teams_file_is_refused_within_200_mb(tmp_path: Path, devices: int) -> None:
    path = tmp_path / "hostile.pickle"
    path.write_bytes(snapshots.repeated_by_reference(devices=devices, alloc_last=devices < 64))
    measured = measure_read(path)
    assert_bounded(measured)
    assert measured.out in ("too_many_devices", "repeated_entries")


def test_a_file_over_the_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = snapshots.write(tmp_path / "big.pickle", snapshots.well_packed())
    with pytest.raises(Rejected) as caught:
        read_snapshot(path, "big.pickle", path.stat().st_size - 1, None)
    assert caught.value.reason is Rejection.TOO_LARGE
    assert caught.value.detail["size"] == path.stat().st_size


def test_the_refusal_names_what_the_pickle_asked_for(tmp_path: Path) -> None:
    data, _ = bad_files(tmp_path)["callable"]
    path = tmp_path / "evil.pickle"
    path.write_bytes(data)
    with pytest.raises(Rejected) as caught:
        read_snapshot(path, "evil.pickle", 1 << 20, None)
    assert caught.value.detail["what"].endswith(".system")  # os.system pickles as posix.system


@pytest.mark.parametrize("reason", list(Rejection))
def test_every_reason_has_one_message_per_locale_naming_the_file_and_fix(
    reason: Rejection,
) -> None:
    detail = {
        "name": "train.pickle",
        "size": 150 << 20,
        "limit": 100 << 20,
        "what": "posix.system",
        "problem": "it holds a list",
        "value": "lots",
    }
    en = str(rejection(reason, Locale.EN, detail))
    el = str(rejection(reason, Locale.EL, detail))
    assert en != el
    named = "lots" if reason is Rejection.BAD_GPU_MEMORY else "train.pickle"
    assert named in en and named in el
    fixes = ("_record_memory_history", "_dump_snapshot", "max_entries", "gpu_memory")
    assert any(fix in en for fix in fixes) and any(fix in el for fix in fixes)


def test_a_snapshot_too_big_to_hold_is_refused_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpu_runner.clinic import _input

    def out_of_memory(data: bytes) -> object:
        raise MemoryError  # what RLIMIT_AS gives the child

    monkeypatch.setattr(_input, "restricted_loads", out_of_memory)
    path = snapshots.write(tmp_path / "huge.pickle", snapshots.well_packed(2))
    with pytest.raises(Rejected) as caught:
        read_snapshot(path, "huge.pickle", 1 << 20, None)
    assert caught.value.reason is Rejection.TOO_BIG_IN_MEMORY
