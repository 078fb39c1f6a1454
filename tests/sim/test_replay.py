"""Replay of _dump_snapshot() pickles: results, the CLI, and hostile or broken files."""

from __future__ import annotations

import argparse
import collections
import os
import pickle
import re
from pathlib import Path
from typing import Any

import pytest

from gpu_runner.sim import GiB, MiB, SnapshotError, load_snapshot, replay_file
from gpu_runner.sim._trace import parse_snapshot
from gpu_runner.sim.cli import add_sim_commands
from gpu_runner.sim.replay import recorded_figures, replay_events, timeline_index
from tests.sim.scenarios import q4_growing_batch
from tests.sim.trace_factory import RecordingDevice, write_snapshot


@pytest.fixture(scope="module")
def q4_snapshot() -> dict[str, Any]:
    """Q4's growing batches recorded under the default settings, uncapped."""
    device = RecordingDevice(80 * GiB)
    q4_growing_batch(device, None)
    return device.dump()


@pytest.fixture
def q4_file(tmp_path: Path, q4_snapshot: dict[str, Any]) -> Path:
    """`q4_snapshot` written as `_dump_snapshot` writes it, to `q4.pickle`."""
    return write_snapshot(tmp_path / "q4.pickle", q4_snapshot)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="quizbot")
    add_sim_commands(parser.add_subparsers(dest="command"))
    return parser


def _run_cli(*argv: str) -> int:
    args = _parser().parse_args(list(argv))
    result = args.func(args)
    assert isinstance(result, int)
    return result


def test_replay_reproduces_the_recorded_peaks_and_compares_expandable(q4_file: Path) -> None:
    snapshot, device, recorded, asked = replay_file(
        q4_file, total_memory=80 * GiB, conf="expandable_segments:True"
    )
    assert device == 0
    assert recorded.conf == ""
    assert recorded.peak_reserved == 1046 * MiB
    assert asked.peak_reserved == 620 * MiB
    assert recorded.peak_allocated == asked.peak_allocated
    assert f"{asked.peak_allocated / MiB:.2f}" == "608.07"
    assert recorded.allocs == recorded.frees == 9 * 16 * 2
    assert recorded.num_ooms == asked.num_ooms == 0
    assert recorded.unknown_frees == 0
    assert 0.0 <= asked.fragmentation_at_peak <= recorded.fragmentation_at_peak < 1.0
    assert recorded_figures(snapshot, device).peak_reserved == 1046 * MiB
    assert recorded.timeline.x_is_time
    assert max(recorded.timeline.reserved) == 1046 * MiB


def test_the_timeline_buckets_the_ops_by_time_or_else_by_index() -> None:
    times = [5_000_000, 6_000_000, 7_500_000, 9_000_000, 9_000_001]
    assert timeline_index(times, 3) == (2, [0.0, 2.5, 4.000001], True)
    # a point whose first op has no time (< 0) puts every point on the op index
    assert timeline_index([5, -1, 6], 10) == (1, [0.0, 1.0, 2.0], False)
    assert timeline_index([], 10) == (1, [], False)


def test_recorded_settings_come_from_the_snapshot(tmp_path: Path) -> None:
    device = RecordingDevice(80 * GiB, conf="expandable_segments:True")
    q4_growing_batch(device, None)
    path = write_snapshot(tmp_path / "es.pickle", device.dump())
    _, _, recorded, asked = replay_file(path, total_memory=80 * GiB, conf="")
    assert recorded.conf == "expandable_segments:True"
    assert recorded.peak_reserved == 620 * MiB
    assert asked.peak_reserved == 1046 * MiB


def test_replay_on_a_smaller_gpu_counts_ooms_and_keeps_going(q4_file: Path) -> None:
    _, _, recorded, asked = replay_file(
        q4_file, total_memory=700 * MiB, conf="expandable_segments:True"
    )
    assert recorded.num_ooms > 0
    assert recorded.num_alloc_retries >= recorded.num_ooms
    assert recorded.peak_reserved <= 700 * MiB
    assert asked.num_ooms == 0  # 620 MiB fits with expandable segments


def test_frees_of_blocks_allocated_before_recording_are_skipped() -> None:
    events = [
        {"action": "free_requested", "addr": 1, "size": 10, "stream": 0, "time_us": 5},
        {"action": "free_completed", "addr": 1, "size": 10, "stream": 0, "time_us": 6},
        {"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "time_us": 7},
        {"action": "alloc", "addr": 2, "size": 30 * MiB, "stream": 3, "time_us": 8},
        {"action": "free_completed", "addr": 2, "size": 30 * MiB, "stream": 3, "time_us": 9},
    ]
    snapshot = parse_snapshot({"segments": [], "device_traces": [[], events]})
    assert snapshot.busiest_device() == 1
    assert snapshot.ignored_actions == 1
    result = replay_events(snapshot.traces[1], total_memory=GiB)
    assert result.unknown_frees == 1
    assert (result.allocs, result.frees) == (1, 1)  # a lone free_completed frees the block
    assert result.final_allocated == 0
    assert result.peak_reserved == 30 * MiB


def test_cli_prints_the_comparison_and_writes_a_png(
    tmp_path: Path, q4_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "plots" / "q4.png"
    code = _run_cli(
        "sim", "replay", str(q4_file), "--conf", "expandable_segments:True",
        "--total-memory", "80GiB", "--plot", str(png),
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    peak_line = next(line for line in out.splitlines() if line.startswith("peak reserved"))
    assert peak_line.split()[2:] == ["1046.00", "MiB", "1046.00", "MiB", "620.00", "MiB"]
    assert "expandable_segments:True" in out
    assert "OOMs" in out and "alloc retries" in out and "fragmentation at peak" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot: {png}" in out


def test_cli_speaks_greek_with_greek_numbers_and_plot(
    tmp_path: Path,
    q4_file: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from matplotlib.figure import Figure

    from tests.greek_checks import (
        check_greek_is_greek,
        greek_misses,
        greek_numbers_in_plot,
        texts,
    )

    drawn: list[Figure] = []
    save = Figure.savefig

    def keep(fig: Figure, *args: Any, **kwargs: Any) -> None:
        drawn.append(fig)
        save(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    argv = ["sim", "replay", str(q4_file), "--conf", "expandable_segments:True", "--locale", "el"]
    codes: list[int] = []
    missed = greek_misses(lambda: codes.append(_run_cli(*argv, "--out", str(tmp_path))))
    out = capsys.readouterr().out
    assert codes == [0] and missed == []
    peak = next(line for line in out.splitlines() if line.startswith("μέγιστη δεσμευμένη"))
    assert peak.split()[2:] == ["1046,00", "MiB", "1046,00", "MiB", "620,00", "MiB"]
    assert "προσομοιωμένη GPU 80,00 GiB" in out
    words = [t.get_text() for t in texts(drawn[0])]
    assert "δεσμευμένη (reserved), ζητούμενες (expandable_segments:True)" in words
    check_greek_is_greek(out.replace(str(tmp_path), ""), words)
    greek_numbers_in_plot("sim replay", words)


def test_cli_refuses_an_unknown_locale(q4_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _run_cli("sim", "replay", str(q4_file), "--locale", "de")
    assert "unknown locale 'de': use one of en, el" in capsys.readouterr().err


def test_cli_out_directory_names_the_png_after_the_snapshot(
    tmp_path: Path, q4_snapshot: dict[str, Any]
) -> None:
    path = write_snapshot(tmp_path / "run7.pickle", q4_snapshot)
    assert _run_cli("sim", "replay", str(path), "--out", str(tmp_path / "out")) == 0
    assert (tmp_path / "out" / "run7-replay.png").stat().st_size > 1000


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--conf", "expandable_segments:yes"], "Expected 'True' or 'False'"),
        (["--total-memory", "lots"], "invalid size 'lots'"),
        (["--device", "3"], "device 3 is not in the snapshot"),
        # a bare number was read as bytes (then 283 OOMs and exit 0): it needs its unit
        (["--total-memory", "80"], "--total-memory '80' has no unit: write e.g. 80GiB"),
        (["--total-memory", "0.5"], "write e.g. 0.5GiB"),
        (["--total-memory", "80MB"], "less than 256 MiB, smaller than any CUDA GPU"),
        (["--total-memory", "2TiB"], "more than 1 TiB, larger than any GPU"),
    ],
)
def test_cli_reports_bad_arguments_as_errors(
    tmp_path: Path,
    q4_file: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    assert _run_cli("sim", "replay", str(q4_file), "--out", str(tmp_path), *extra) == 2
    assert message in capsys.readouterr().err


def test_corrupted_file_is_reported_not_raised(
    tmp_path: Path, q4_snapshot: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    data = pickle.dumps(q4_snapshot)
    path = tmp_path / "cut.pickle"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(SnapshotError, match="corrupted or not a pickle"):
        load_snapshot(path)
    assert _run_cli("sim", "replay", str(path), "--out", str(tmp_path)) == 2
    assert "corrupted" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.png"))


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="cannot read"):
        load_snapshot(tmp_path / "nope.pickle")


class _Exploit:
    """Unpickling this would create a directory: the loader must refuse it first."""

    def __init__(self, target: str) -> None:
        self.target = target

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.mkdir, (self.target,))


class ForeignEvent:
    def __init__(self) -> None:
        self.action = "alloc"


def test_pickle_that_would_run_code_is_refused_without_running_it(tmp_path: Path) -> None:
    target = tmp_path / "pwned"
    snapshot = {"segments": [], "device_traces": [[_Exploit(str(target))]]}
    path = write_snapshot(tmp_path / "evil.pickle", snapshot)
    with pytest.raises(SnapshotError, match=r"refused: it refers to (os|posix)\.mkdir"):
        load_snapshot(path)
    assert not target.exists()


def test_pickle_with_a_foreign_class_is_refused(tmp_path: Path) -> None:
    path = write_snapshot(
        tmp_path / "foreign.pickle", {"segments": [], "device_traces": [[ForeignEvent()]]}
    )
    with pytest.raises(SnapshotError, match=r"tests\.sim\.test_replay\.ForeignEvent"):
        load_snapshot(path)


def test_plain_data_containers_are_allowed(tmp_path: Path) -> None:
    event = dict(action="alloc", addr=16, size=1000, stream=0, time_us=1, frames=({"set": {1}},))
    path = write_snapshot(tmp_path / "ok.pickle", {"segments": [], "device_traces": [[event]]})
    assert load_snapshot(path).traces[0][0][:4] == (0, 16, 1000, 0)


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (collections.OrderedDict(a=1), "collections.OrderedDict"),
        (bytearray(b"x"), "builtins.bytearray"),
        (complex(1, 2), "builtins.complex"),
    ],
)
def test_containers_torch_never_writes_are_refused_by_name(
    tmp_path: Path, value: object, name: str
) -> None:
    # Built by calling a class: torch's snapshots are dicts, lists, tuples and scalars.
    path = tmp_path / "odd.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [[value]]}, protocol=4))
    with pytest.raises(SnapshotError, match=rf"refused: it refers to {re.escape(name)},"):
        load_snapshot(path)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([1, 2, 3], "expected a dict with 'segments' and 'device_traces', got list"),
        ({"segments": []}, "it has no 'device_traces'"),
        ({"segments": [], "device_traces": [[]]}, "holds no allocation events"),
        ({"segments": [], "device_traces": [[{"action": "alloc"}]]}, "field 'addr'"),
        ({"segments": [], "device_traces": [["alloc"]]}, r"device_traces\[0\]\[0\] must be a dict"),
    ],
)
def test_wrong_shapes_are_explained(tmp_path: Path, payload: object, message: str) -> None:
    path = write_snapshot(tmp_path / "odd.pickle", payload)
    with pytest.raises(SnapshotError, match=message):
        load_snapshot(path)


@pytest.mark.parametrize("size", ["80GiB", "80GB", "81920MiB", "80 gib", "768MiB", "1TiB"])
def test_cli_takes_a_gpu_size_with_its_unit(
    tmp_path: Path, q4_file: Path, capsys: pytest.CaptureFixture[str], size: str
) -> None:
    assert (
        _run_cli("sim", "replay", str(q4_file), "--out", str(tmp_path), "--total-memory", size) == 0
    )
    assert "simulated GPU" in capsys.readouterr().out
